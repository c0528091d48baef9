import APNsCore
import Base64URL
import Locking
import TLS

/// The provider token for APNs token auth: an ES256 JWT (RFC 7519, RFC 7515)
/// with header `{"alg":"ES256","kid":<key id>}` and claims
/// `{"iss":<team id>,"iat":<unix seconds>}`, shared by every connection of
/// every loop.
///
/// Apple refuses a token older than 60 minutes (`ExpiredProviderToken`) and
/// one renewed more often than every 20 minutes (`TooManyProviderTokenUpdates`),
/// so the token is renewed when it is 50 minutes old. Other signers of the
/// same key (another instance, a restart) count against those 20 minutes
/// too, so a renewal can still be refused; then (`tokenUpdatesRefused`) the
/// token before it serves again while APNs takes it, and no token is signed
/// for 20 minutes: the refused one is used again when the other runs out.
public final class APNsTokenProvider: Sendable {
    public static let renewalAge = 50 * 60
    /// Apple: "not more than once every 20 minutes".
    public static let minimumRenewalAge = 20 * 60
    /// Apple: a token is accepted for 60 minutes from its `iat`.
    public static let maximumAge = ProviderToken.maximumAge
    /// A token is not relied on in its last 5 minutes: the relay's clock and
    /// APNs' differ, and a request takes time to arrive.
    public static let expiryMargin = 5 * 60

    public let keyID: String
    public let teamID: String
    private let signer: ES256Signer

    /// True when `signature` is this key's signature of `signingInput`: a
    /// provider token a backend signed with the same .p8 (the proxy's check).
    public func verifies(_ signingInput: [UInt8], signature: [UInt8]) -> Bool {
        signer.verify(signingInput, signature: signature)
    }

    private struct SignedToken {
        var token: String
        var issuedAt: Int
        /// `bearer <token>`, built once per token rather than per request.
        var authorization: String

        init(token: String, issuedAt: Int) {
            self.token = token
            self.issuedAt = issuedAt
            authorization = "bearer " + token
        }

        /// APNs still takes it at `now`, with the margin to spare.
        func isUsable(now: Int) -> Bool {
            now - issuedAt < APNsTokenProvider.maximumAge - APNsTokenProvider.expiryMargin
        }
    }

    private struct State {
        /// The token sent.
        var current: SignedToken
        /// The token `current` replaced, kept to go back to if APNs refuses
        /// `current` as an update too many.
        var previous: SignedToken?
        /// A token newer than `current` that APNs refused as an update too
        /// many: `current` went back to the one before it. Used again, rather
        /// than signing another, when `current` runs out.
        var refused: SignedToken?
        /// No token is signed before this (unix seconds), unless the one in
        /// use would run out or the clock stepped back.
        var signingHeldUntil = 0

        init(current: SignedToken) {
            self.current = current
        }
    }

    private let state: Locked<State>

    /// Signs the first token at once, so an unusable key fails startup.
    /// `names` say where key id, team id and key came from, for errors.
    public init(signer: ES256Signer, keyID: String, teamID: String, now: Int,
                names: CredentialNames = .environment) throws(APNsStartupError) {
        try Self.checkField(keyID, variable: names.keyID)
        try Self.checkField(teamID, variable: names.teamID)
        self.signer = signer
        self.keyID = keyID
        self.teamID = teamID
        let token: String
        do {
            token = try Self.makeJWT(signer: signer, keyID: keyID, teamID: teamID, issuedAt: now)
        } catch {
            throw .invalidTokenField(variable: names.p8File, reason: error.description)
        }
        state = Locked(State(current: SignedToken(token: token, issuedAt: now)))
    }

    /// Apple's key and team ids are 10 alphanumerics; anything outside
    /// [A-Za-z0-9._-] would need JSON escaping and is surely a mistake.
    private static func checkField(_ value: String, variable: String) throws(APNsStartupError) {
        guard !value.isEmpty, value.utf8.count <= 64 else {
            throw .invalidTokenField(variable: variable, reason: "must be 1 to 64 characters")
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                throw .invalidTokenField(variable: variable, reason: "must be letters and digits (Apple's ids are 10 alphanumerics)")
            }
        }
    }

    /// The token to send at unix time `now`, renewed first when 50 minutes
    /// old. Should signing ever fail, the previous token stays in use and
    /// renewal is tried again on the next call.
    public func token(now: Int) -> String {
        currentToken(now: now).token
    }

    /// The token and when it was issued (to report a rejection of exactly
    /// that token to `tokenRejected` or `tokenUpdatesRefused`).
    public func currentToken(now: Int) -> (token: String, issuedAt: Int) {
        state.withLock { state in
            renewIfDue(&state, now: now)
            return (state.current.token, state.current.issuedAt)
        }
    }

    /// The `authorization` field value (`bearer <token>`) to send at unix
    /// time `now`, and when its token was issued; renews as `currentToken` does.
    public func currentAuthorization(now: Int) -> (value: String, issuedAt: Int) {
        state.withLock { state in
            renewIfDue(&state, now: now)
            return (state.current.authorization, state.current.issuedAt)
        }
    }

    /// APNs refused the token issued at `issuedAt` (ExpiredProviderToken,
    /// InvalidProviderToken): renew it, unless that would break Apple's
    /// 20-minute minimum or another caller already renewed it. A token
    /// signed and refused as an update too many is taken again instead of
    /// signing another.
    public func tokenRejected(issuedAt: Int, now: Int) {
        state.withLock { state in
            guard state.current.issuedAt == issuedAt, now - state.current.issuedAt >= Self.minimumRenewalAge else {
                return
            }
            if let refused = state.refused {
                state.current = refused
                state.refused = nil
                state.previous = nil
                return
            }
            guard now >= state.signingHeldUntil else { return }
            sign(&state, now: now)
        }
    }

    /// APNs refused the token issued at `issuedAt` as an update too many
    /// (429 TooManyProviderTokenUpdates): this key's tokens are renewed more
    /// often than Apple allows, by this process or another signer of the
    /// key. No token is signed for 20 minutes from now; the token before it
    /// is sent again while APNs still takes it (with `expiryMargin` to
    /// spare), else the refused one stays (APNs takes it once its 20
    /// minutes are over). A report about a token no longer in use changes
    /// nothing: another request's report came first.
    public func tokenUpdatesRefused(issuedAt: Int, now: Int) {
        state.withLock { state in
            guard state.current.issuedAt == issuedAt else { return }
            state.signingHeldUntil = now + Self.minimumRenewalAge
            if let previous = state.previous, previous.isUsable(now: now) {
                state.refused = state.current
                state.current = previous
                state.previous = nil
            }
        }
    }

    /// When the token in use was issued (unix seconds).
    public var issuedAt: Int { state.withLock { $0.current.issuedAt } }

    // MARK: other signers of the key (a fleet)

    /// The token in use and when it was issued, not renewed (a fleet's
    /// coordination decides renewals itself).
    public var inUse: (token: String, issuedAt: Int) {
        state.withLock { ($0.current.token, $0.current.issuedAt) }
    }

    /// A new token issued at `issuedAt`, not put in use (a fleet publishes
    /// it first, then `adopt`s it); nil if signing fails.
    public func sign(issuedAt: Int) -> String? {
        try? Self.makeJWT(signer: signer, keyID: keyID, teamID: teamID, issuedAt: issuedAt)
    }

    /// Whether `token` has the form this key's tokens take when issued at
    /// `issuedAt`: the header and claims exactly as `makeJWT` writes them
    /// (this key id, this team id, that `iat`) and a signature of 64 bytes
    /// (r‖s). The signature itself is APNs' to check: the relay holds no
    /// public key to verify it with.
    public func isWellFormed(_ token: String, issuedAt: Int) -> Bool {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return false }
        let header = #"{"alg":"ES256","kid":""# + keyID + #""}"#
        let claims = #"{"iss":""# + teamID + #"","iat":"# + String(issuedAt) + "}"
        guard parts[0].elementsEqual(base64URLEncode(Array(header.utf8)).utf8),
              parts[1].elementsEqual(base64URLEncode(Array(claims.utf8)).utf8),
              let signature = try? base64URLDecode(String(decoding: parts[2], as: UTF8.self))
        else { return false }
        return signature.count == 64
    }

    /// Puts in use a token another signer of this key made (the fleet's
    /// shared one); the one in use becomes `previous`. Refused (false)
    /// when it is not well formed, issued more than a minute ahead of
    /// `now`, not usable at `now` (with `expiryMargin` to spare), or the
    /// one APNs refused as an update too many while signing is held.
    /// True, changing nothing, when it is the token in use.
    @discardableResult
    public func adopt(token: String, issuedAt: Int, now: Int) -> Bool {
        guard issuedAt <= now + 60, isWellFormed(token, issuedAt: issuedAt) else { return false }
        let adopted = SignedToken(token: token, issuedAt: issuedAt)
        guard adopted.isUsable(now: now) else { return false }
        return state.withLock { state in
            if state.current.token == token { return true }
            if now < state.signingHeldUntil, state.refused?.token == token { return false }
            state.previous = state.current
            state.current = adopted
            state.refused = nil
            return true
        }
    }

    /// Whether no token may be signed now: APNs refused an update of this
    /// key less than 20 minutes ago.
    public func isSigningHeld(now: Int) -> Bool {
        state.withLock { now < $0.signingHeldUntil }
    }

    private func renewIfDue(_ state: inout State, now: Int) {
        // A clock stepped back by more than a minute renews at once: `iat`
        // in the future is refused by APNs.
        if now < state.current.issuedAt - 60 {
            sign(&state, now: now)
            state.previous = nil
            return
        }
        let age = now - state.current.issuedAt
        guard age >= Self.renewalAge else { return }
        // While signing is held (an update was refused), the token in use
        // serves until it runs out; a token refused then is taken next.
        if now < state.signingHeldUntil {
            guard !state.current.isUsable(now: now) else { return }
            if let refused = state.refused {
                state.current = refused
                state.refused = nil
                state.previous = nil
                return
            }
            // Nothing else is left: a token refused as an update too many
            // may pass, an expired one never does.
        }
        sign(&state, now: now)
    }

    /// A new token in use; the one it replaces is kept as `previous`.
    private func sign(_ state: inout State, now: Int) {
        guard let token = try? Self.makeJWT(signer: signer, keyID: keyID, teamID: teamID, issuedAt: now) else { return }
        state.previous = state.current
        state.current = SignedToken(token: token, issuedAt: now)
        state.refused = nil
    }

    /// `base64url(header).base64url(claims).base64url(r‖s)`, no padding
    /// (RFC 7515 §2, §7.1; RFC 7518 §3.4 for the raw signature). Built by
    /// hand: key order and spacing are fixed, and the ids were checked to
    /// need no JSON escaping.
    public static func makeJWT(signer: ES256Signer, keyID: String, teamID: String,
                               issuedAt: Int) throws(CredentialError) -> String {
        let header = #"{"alg":"ES256","kid":""# + keyID + #""}"#
        let claims = #"{"iss":""# + teamID + #"","iat":"# + String(issuedAt) + "}"
        let signingInput = base64URLEncode(Array(header.utf8)) + "." + base64URLEncode(Array(claims.utf8))
        let signature = try signer.sign(Array(signingInput.utf8))
        return signingInput + "." + base64URLEncode(signature)
    }
}
