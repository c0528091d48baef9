import RelayCore
import TLS

/// Why the APNs client cannot start. Each description is one line naming the
/// variable and the problem, for the daemon's fail-fast startup (ARCHITECTURE.md §4).
public enum APNsStartupError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A PKCS#12 (from `P12_FILENAME` or `P12_BASE64`) cannot be used.
    case certificate(source: String, CredentialError)
    /// `P12_BASE64` is not base64.
    case invalidBase64(String)
    /// The `.p8` key of `TOKEN_AUTH_KEY_FILENAME` cannot be used.
    case tokenKey(path: String, CredentialError)
    /// `TOKEN_KEY_ID` / `TOKEN_TEAM_ID` would break the JWT header or claims.
    case invalidTokenField(variable: String, reason: String)
    /// `CA_FILENAME` or the TLS context cannot be set up.
    case tls(TLSError)

    public var description: String {
        switch self {
        case .certificate(let source, let error): "\(source): \(error)"
        case .invalidBase64(let reason): "P12_BASE64: not valid base64: \(reason)"
        case .tokenKey(let path, let error): "TOKEN_AUTH_KEY_FILENAME (\(path)): \(error)"
        case .invalidTokenField(let variable, let reason): "\(variable): \(reason)"
        case .tls(let error): "APNs TLS setup (CA_FILENAME or credentials): \(error)"
        }
    }
}

/// What authenticates the relay to APNs.
public enum APNsAuthentication: Sendable {
    /// Certificate auth: presented in the TLS handshake.
    case certificate(TLSIdentity)
    /// Token auth: `authorization: bearer <JWT>` on every request.
    case token(APNsTokenProvider)
}

/// Loaded, validated credentials and the topic they imply.
public struct APNsCredentials: Sendable {
    public let authentication: APNsAuthentication
    /// `apns-topic`: `TOPIC`, else the certificate's UID, else the default.
    public let topic: String
    /// One log-safe line: kind, subject or key id, expiry, topic. No secrets.
    public let logDescription: String

    /// The identity to put in the TLS context (nil with token auth).
    public var tlsIdentity: TLSIdentity? {
        if case .certificate(let identity) = authentication { return identity }
        return nil
    }

    /// The token provider (nil with certificate auth).
    public var tokenProvider: APNsTokenProvider? {
        if case .token(let provider) = authentication { return provider }
        return nil
    }

    /// The client TLS context for these credentials: TLS ≥ 1.2, ALPN `h2`,
    /// `caFile` (PEM) or the system roots, the certificate when there is one.
    /// Make one per process and share it.
    public func makeTLSContext(caFile: String?) throws(APNsStartupError) -> TLSContext {
        do {
            return try TLSContext.client(trustedRootsFile: caFile, identity: tlsIdentity, alpn: ["h2"])
        } catch {
            throw .tls(error)
        }
    }
}

/// Loads the APNs credentials `configuration` selects, in webpush-apn-relay's
/// precedence (token auth, then `P12_BASE64`, then `P12_FILENAME`), and checks
/// them now so a bad credential stops startup with one clear line.
///
/// - Parameter now: unix seconds, for certificate validity and the first JWT.
public func loadCredentials(_ configuration: Configuration, now: Int) throws(APNsStartupError) -> APNsCredentials {
    switch configuration.credentialSource {
    case .token(let keyFile, let keyID, let teamID):
        let signer: ES256Signer
        do {
            signer = try ES256Signer(pkcs8File: keyFile)
        } catch {
            throw .tokenKey(path: keyFile, error)
        }
        let provider = try APNsTokenProvider(signer: signer, keyID: keyID, teamID: teamID, now: now)
        let topic = configuration.effectiveTopic(certificateUID: nil)
        let topicOrigin = configuration.topic != nil ? "TOPIC" : "default"
        return APNsCredentials(
            authentication: .token(provider), topic: topic,
            logDescription: "token auth (key id \(keyID), team \(teamID)), topic \(topic) (from \(topicOrigin))")
    case .p12Base64(let text):
        let bytes = try decodeP12Base64(text)
        return try certificateCredentials(configuration, source: "P12_BASE64", now: now) { () throws(CredentialError) in
            try TLSIdentity.pkcs12(bytes, password: configuration.p12Password)
        }
    case .p12File(let path):
        return try certificateCredentials(configuration, source: "P12_FILENAME (\(path))", now: now) { () throws(CredentialError) in
            try TLSIdentity.pkcs12(file: path, password: configuration.p12Password)
        }
    }
}

private func certificateCredentials(_ configuration: Configuration, source: String, now: Int,
                                    load: () throws(CredentialError) -> TLSIdentity) throws(APNsStartupError) -> APNsCredentials {
    let identity: TLSIdentity
    do {
        identity = try load()
        try identity.validate(now: now)
    } catch {
        throw .certificate(source: source, error)
    }
    let topic = configuration.effectiveTopic(certificateUID: identity.subjectUID)
    let subject = identity.subjectCommonName ?? identity.subjectUID ?? "unnamed"
    let topicOrigin = configuration.topic != nil ? "TOPIC" : identity.subjectUID != nil ? "certificate UID" : "default"
    return APNsCredentials(
        authentication: .certificate(identity), topic: topic,
        logDescription: "certificate auth (\(subject), expires \(certificateDayText(identity.notAfter))), "
            + "topic \(topic) (from \(topicOrigin))")
}

/// P12_BASE64 as `base64` writes it: standard or url alphabet, padding
/// optional (RelayCore's decoder), line breaks of wrapped output ignored.
func decodeP12Base64(_ text: String) throws(APNsStartupError) -> [UInt8] {
    let digits = text.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\t") }
    guard !digits.isEmpty else { throw .invalidBase64("empty") }
    do {
        return try base64URLDecode(String(decoding: digits, as: UTF8.self))
    } catch {
        switch error {
        case .invalidCharacter: throw .invalidBase64("a character outside the base64 alphabet")
        case .invalidLength: throw .invalidBase64("truncated (not a base64 length)")
        case .invalidPadding: throw .invalidBase64("malformed '=' padding")
        }
    }
}
