import APNsCore
import Base64URL
import TLS

/// Why the APNs client cannot start. Each description is one line naming the
/// variable and the problem, for the daemon's fail-fast startup (ARCHITECTURE.md §7).
public enum APNsStartupError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A PKCS#12 (from `P12_FILENAME` or `P12_BASE64`, or an app's
    /// `p12-file`/`p12-base64`) cannot be used. `source` names where it came from.
    case certificate(source: String, CredentialError)
    /// `P12_BASE64` (`p12-base64`) is not base64: source, reason.
    case invalidBase64(source: String, reason: String)
    /// The `.p8` key (`TOKEN_AUTH_KEY_FILENAME`, `p8-file`, `p8`) cannot be used.
    case tokenKey(source: String, CredentialError)
    /// `TOKEN_KEY_ID` / `TOKEN_TEAM_ID` (`key-id`, `team-id`) would break the
    /// JWT header or claims.
    case invalidTokenField(variable: String, reason: String)
    /// `CA_FILENAME` or the TLS context cannot be set up.
    case tls(TLSError)

    public var description: String {
        switch self {
        case .certificate(let source, let error): "\(source): \(error)"
        case .invalidBase64(let source, let reason): "\(source): not valid base64: \(reason)"
        case .tokenKey(let source, let error): "\(source): \(error)"
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

/// Where each part of a credential came from, as errors name it: the
/// environment variables, or a key of an app in the apps file.
public struct CredentialNames: Sendable, Equatable {
    public var p12File: String
    public var p12Base64: String
    public var p8File: String
    public var p8: String
    public var keyID: String
    public var teamID: String

    public static let environment = CredentialNames(
        p12File: "P12_FILENAME", p12Base64: "P12_BASE64", p8File: "TOKEN_AUTH_KEY_FILENAME", p8: "TOKEN_AUTH_KEY",
        keyID: "TOKEN_KEY_ID", teamID: "TOKEN_TEAM_ID")

    /// `<file>: app "<id>" (<environment>), key "<key>"`.
    public static func appsFile(_ file: String, app: String, environment: APNsEnvironment) -> CredentialNames {
        func name(_ key: String) -> String { "\(file): app \"\(app)\" (\(environment.rawValue)), key \"\(key)\"" }
        return CredentialNames(p12File: name("p12-file"), p12Base64: name("p12-base64"), p8File: name("p8-file"),
                               p8: name("p8"), keyID: name("key-id"), teamID: name("team-id"))
    }
}

/// One credential, loaded and checked: what authenticates, what a reload
/// compares, and what `check-config` and the log may show.
public struct LoadedCredential: Sendable {
    public let authentication: APNsAuthentication
    /// The spec and the bytes read for it: the same fingerprint after a
    /// reload means the same credential (its connections stay).
    public let fingerprint: CredentialFingerprint
    /// The certificate's subject UID (its bundle id), if any.
    public let certificateUID: String?
    /// Unix seconds; nil with token auth.
    public let notAfter: Int?
    /// Log-safe, no secret: "certificate auth (CN, expires 2027-01-31)" or
    /// "token auth (key id ABC, team DEF)".
    public let summary: String
    /// A token key's id (`kid`); nil for a certificate.
    public var keyID: String? {
        if case .token(let provider) = authentication { provider.keyID } else { nil }
    }
}

/// A credential's identity for reloads (holds secrets: never log it).
public struct CredentialFingerprint: Hashable, Sendable {
    public var spec: CredentialSpec
    public var contents: [UInt8]
}

/// Loads the credential `spec` describes (reading its file, if any) and
/// checks it now, so a bad credential stops startup (or a reload) with one
/// clear line. `now`: unix seconds, for certificate validity and the first JWT.
public func loadCredential(_ spec: CredentialSpec, names: CredentialNames = .environment,
                           now: Int) throws(APNsStartupError) -> LoadedCredential {
    switch spec {
    case .p8File(let path, let keyID, let teamID):
        let source = "\(names.p8File) (\(path))"
        let pem: [UInt8]
        do { pem = try CredentialFile.read(path) } catch { throw .tokenKey(source: source, error) }
        return try tokenCredential(spec, pem: pem, source: source, keyID: keyID, teamID: teamID, names: names,
                                   now: now)
    case .p8(let text, let keyID, let teamID):
        return try tokenCredential(spec, pem: Array(text.utf8), source: names.p8, keyID: keyID, teamID: teamID,
                                   names: names, now: now)
    case .p12Base64(let text, let password):
        let bytes = try decodeP12Base64(text, source: names.p12Base64)
        return try certificateCredential(spec, bytes: bytes, password: password, source: names.p12Base64, now: now)
    case .p12File(let path, let password):
        let source = "\(names.p12File) (\(path))"
        let bytes: [UInt8]
        do { bytes = try CredentialFile.read(path) } catch { throw .certificate(source: source, error) }
        return try certificateCredential(spec, bytes: bytes, password: password, source: source, now: now)
    }
}

private func tokenCredential(_ spec: CredentialSpec, pem: [UInt8], source: String, keyID: String, teamID: String,
                             names: CredentialNames, now: Int) throws(APNsStartupError) -> LoadedCredential {
    let signer: ES256Signer
    do { signer = try ES256Signer(pkcs8PEM: pem) } catch { throw .tokenKey(source: source, error) }
    let provider = try APNsTokenProvider(signer: signer, keyID: keyID, teamID: teamID, now: now, names: names)
    return LoadedCredential(
        authentication: .token(provider), fingerprint: CredentialFingerprint(spec: spec, contents: pem),
        certificateUID: nil, notAfter: nil, summary: "token auth (key id \(keyID), team \(teamID))")
}

private func certificateCredential(_ spec: CredentialSpec, bytes: [UInt8], password: String, source: String,
                                   now: Int) throws(APNsStartupError) -> LoadedCredential {
    let identity: TLSIdentity
    do {
        identity = try TLSIdentity.pkcs12(bytes, password: password)
        try identity.validate(now: now)
    } catch {
        throw .certificate(source: source, error)
    }
    let subject = identity.subjectCommonName ?? identity.subjectUID ?? "unnamed"
    return LoadedCredential(
        authentication: .certificate(identity), fingerprint: CredentialFingerprint(spec: spec, contents: bytes),
        certificateUID: identity.subjectUID, notAfter: identity.notAfter,
        summary: "certificate auth (\(subject), expires \(certificateDayText(identity.notAfter)))")
}

/// P12_BASE64 as `base64` writes it: standard or url alphabet, padding
/// optional (RelayCore's decoder), line breaks of wrapped output ignored.
func decodeP12Base64(_ text: String, source: String) throws(APNsStartupError) -> [UInt8] {
    let digits = text.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\t") }
    guard !digits.isEmpty else { throw .invalidBase64(source: source, reason: "empty") }
    do {
        return try base64URLDecode(String(decoding: digits, as: UTF8.self))
    } catch {
        switch error {
        case .invalidCharacter: throw .invalidBase64(source: source, reason: "a character outside the base64 alphabet")
        case .invalidLength: throw .invalidBase64(source: source, reason: "truncated (not a base64 length)")
        case .invalidPadding: throw .invalidBase64(source: source, reason: "malformed '=' padding")
        }
    }
}
