import RelayCore
import Locking
import TLS

/// The provider token for APNs token auth: an ES256 JWT (RFC 7519, RFC 7515)
/// with header `{"alg":"ES256","kid":<key id>}` and claims
/// `{"iss":<team id>,"iat":<unix seconds>}`, shared by every connection of
/// every loop.
///
/// Apple refuses a token older than 60 minutes (`ExpiredProviderToken`) and
/// one renewed more often than every 20 minutes (`TooManyProviderTokenUpdates`),
/// so the token is renewed when it is 50 minutes old.
public final class APNsTokenProvider: Sendable {
    public static let renewalAge = 50 * 60
    /// Apple: "not more than once every 20 minutes".
    public static let minimumRenewalAge = 20 * 60

    public let keyID: String
    public let teamID: String
    private let signer: ES256Signer

    private struct Current {
        var token: String
        var issuedAt: Int
        /// `bearer <token>`, built once per token rather than per request.
        var authorization: String

        init(token: String, issuedAt: Int) {
            self.token = token
            self.issuedAt = issuedAt
            authorization = "bearer " + token
        }
    }

    private let current: Locked<Current>

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
        current = Locked(Current(token: token, issuedAt: now))
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
    /// that token to `tokenRejected`).
    public func currentToken(now: Int) -> (token: String, issuedAt: Int) {
        current.withLock { current in
            renewIfDue(&current, now: now)
            return (current.token, current.issuedAt)
        }
    }

    /// The `authorization` field value (`bearer <token>`) to send at unix
    /// time `now`, and when its token was issued; renews as `currentToken` does.
    public func currentAuthorization(now: Int) -> (value: String, issuedAt: Int) {
        current.withLock { current in
            renewIfDue(&current, now: now)
            return (current.authorization, current.issuedAt)
        }
    }

    /// APNs refused the token issued at `issuedAt` (ExpiredProviderToken,
    /// InvalidProviderToken): renew it, unless that would break Apple's
    /// 20-minute minimum or another caller already renewed it.
    public func tokenRejected(issuedAt: Int, now: Int) {
        current.withLock { current in
            guard current.issuedAt == issuedAt, now - current.issuedAt >= Self.minimumRenewalAge else { return }
            renew(&current, now: now)
        }
    }

    /// When the token in use was issued (unix seconds).
    public var issuedAt: Int { current.withLock { $0.issuedAt } }

    private func renewIfDue(_ current: inout Current, now: Int) {
        // A clock stepped back by more than a minute also renews: `iat`
        // in the future is refused by APNs.
        if now - current.issuedAt >= Self.renewalAge || now < current.issuedAt - 60 {
            renew(&current, now: now)
        }
    }

    private func renew(_ current: inout Current, now: Int) {
        if let token = try? Self.makeJWT(signer: signer, keyID: keyID, teamID: teamID, issuedAt: now) {
            current = Current(token: token, issuedAt: now)
        }
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
