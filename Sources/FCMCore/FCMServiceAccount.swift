// A Firebase service account, read from the JSON file the Firebase console
// gives ("Project settings → Service accounts → Generate new private key"):
//
//   {"type":"service_account","project_id":"…","private_key_id":"…",
//    "private_key":"-----BEGIN PRIVATE KEY-----\n…","client_email":"…",
//    "client_id":"…","auth_uri":"…","token_uri":"https://oauth2.googleapis.com/token",…}
//
// Only what the relay uses is read and checked; the other members are
// ignored. The private key's PEM is checked for its shape here and read as
// a key by TLS (RS256Signer); nothing this file describes ever shows it.

import JSON

/// A service account's identity and key, validated.
public struct FCMServiceAccount: Sendable, Equatable, CustomStringConvertible {
    /// The Firebase project the messages are sent for (`project_id`): the
    /// `<project>` of `/v1/projects/<project>/messages:send`.
    public let projectID: String
    /// The key's id (`private_key_id`), the assertion's `kid`.
    public let privateKeyID: String
    /// The key (`private_key`), PEM: PKCS#8 as the console writes it, or PKCS#1.
    public let privateKey: ServiceAccountPrivateKey
    /// The account (`client_email`), the assertion's `iss`.
    public let clientEmail: String
    /// Where access tokens come from (`token_uri`), the assertion's `aud`.
    public let tokenEndpoint: OAuthTokenEndpoint

    /// A service account's file is about 2.4 KB (a 2048-bit key); 64 KiB
    /// leaves room for any key size and refuses a wrong file early.
    public static let maxFileBytes = 65_536

    public init(projectID: String, privateKeyID: String, privateKey: ServiceAccountPrivateKey, clientEmail: String,
                tokenEndpoint: OAuthTokenEndpoint) {
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.clientEmail = clientEmail
        self.tokenEndpoint = tokenEndpoint
    }

    /// Reads the file's text. A `token_uri` left out means Google's
    /// (`OAuthTokenEndpoint.google`), as Google's own libraries take it.
    public init(json bytes: some Collection<UInt8>) throws(FCMServiceAccountError) {
        guard bytes.count <= Self.maxFileBytes else { throw .tooLarge(bytes: bytes.count, limit: Self.maxFileBytes) }
        let text = Array(bytes)
        let document: JSONValue
        do {
            document = try parseStrictJSON(text)
        } catch {
            throw .notJSON(JSONErrorPlace(text, offset: error.offset))
        }
        guard case .object = document else { throw .notAnObject(kind: document.kindDescription) }
        let type = try Self.string("type", in: document)
        guard type == "service_account" else {
            throw .invalid(field: "type", reason: "is \(quotedForMessage(type)), a service account's file says \"service_account\"")
        }
        projectID = try Self.string("project_id", in: document, checkedBy: Self.projectIDProblem)
        privateKeyID = try Self.string("private_key_id", in: document, checkedBy: Self.privateKeyIDProblem)
        privateKey = try ServiceAccountPrivateKey(pemText: Self.string("private_key", in: document))
        clientEmail = try Self.string("client_email", in: document, checkedBy: Self.clientEmailProblem)
        if document["token_uri"] == nil {
            tokenEndpoint = .google
        } else {
            let uri = try Self.string("token_uri", in: document)
            do {
                tokenEndpoint = try OAuthTokenEndpoint(uri: uri)
            } catch {
                throw .invalid(field: "token_uri", reason: error.reason)
            }
        }
    }

    /// The path messages are posted to (FCM HTTP v1: `projects.messages.send`).
    public var sendPath: String { "/v1/projects/\(projectID)/messages:send" }

    /// Names the account, never its key: "<client_email> (key <private_key_id>, project <project_id>)".
    public var description: String { "\(clientEmail) (key \(privateKeyID), project \(projectID))" }

    // MARK: Fields

    /// The longest value of a field other than the key: Google's ids and
    /// addresses are far shorter, and a message quotes at most 40 characters.
    static let maxFieldBytes = 256

    private static func string(_ field: String, in document: JSONValue) throws(FCMServiceAccountError) -> String {
        guard let value = document[field] else { throw .missing(field: field) }
        guard case .string(let text) = value else { throw .notAString(field: field, kind: value.kindDescription) }
        guard !text.isEmpty else { throw .invalid(field: field, reason: "is empty") }
        return text
    }

    /// A field other than the key: a string, at most `maxFieldBytes`, that
    /// `problem` finds nothing wrong with (its answer is the reason).
    private static func string(_ field: String, in document: JSONValue, checkedBy problem: (String) -> String?)
        throws(FCMServiceAccountError) -> String {
        let text = try string(field, in: document)
        guard text.utf8.count <= maxFieldBytes else {
            throw .invalid(field: field, reason: "is \(text.utf8.count) bytes long (at most \(maxFieldBytes))")
        }
        if let reason = problem(text) { throw .invalid(field: field, reason: reason) }
        return text
    }

    /// Google's project ids are lowercase letters, digits and hyphens, and
    /// an old domain-scoped one is `example.com:project`; the id becomes a
    /// segment of the send path, so never `/`, `?`, `%` or a blank.
    static func projectIDProblem(_ text: String) -> String? {
        guard let first = text.utf8.first, isLowercaseLetter(first) || isDigit(first) else {
            return "\(quotedForMessage(text)) does not start with a lowercase letter or digit"
        }
        let allowed = text.utf8.allSatisfy {
            isLowercaseLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":")
        }
        return allowed ? nil : "\(quotedForMessage(text)) holds more than lowercase letters, digits, '-', '.' and ':'"
    }

    /// Google's key ids are 40 hexadecimal digits; letters, digits, `-`,
    /// `_` and `.` are taken.
    static func privateKeyIDProblem(_ text: String) -> String? {
        let allowed = text.utf8.allSatisfy {
            isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
        }
        return allowed ? nil : "\(quotedForMessage(text)) holds more than letters, digits, '-', '_' and '.'"
    }

    /// `name@project.iam.gserviceaccount.com`: one `@` between a non-empty
    /// name and domain, of letters, digits and `.-_+`.
    static func clientEmailProblem(_ text: String) -> String? {
        let parts = text.utf8.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            return "\(quotedForMessage(text)) is not an address (name@domain)"
        }
        let allowed = text.utf8.allSatisfy {
            isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: ".")
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "+")
        }
        return allowed ? nil : "\(quotedForMessage(text)) holds more than letters, digits, '@', '.', '-', '_' and '+'"
    }
}

/// The private key of a service account: PEM text. Its description and its
/// reflection (`dump`, `String(reflecting:)`) show the size only, so a key
/// that reaches a log line by mistake still does not show.
public struct ServiceAccountPrivateKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable {
    /// The PEM text, as the file's `private_key` holds it (JSON's `\n` decoded).
    public let pem: [UInt8]

    /// The largest key: a PEM 16384-bit RSA key is about 12.6 KB.
    public static let maxBytes = 16_384

    /// The labels of the blocks read as a key (RFC 7468 §10, and PKCS#1's
    /// traditional form, which OpenSSL writes too).
    static let keyLabels = ["PRIVATE KEY", "RSA PRIVATE KEY"]

    /// `pemText` must be one PEM block labelled as an unencrypted private key
    /// with a base64 body (RFC 7468 §3); whether it is an RSA key OpenSSL
    /// decides (RS256Signer). No error quotes the text.
    public init(pemText text: String) throws(FCMServiceAccountError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maxBytes else {
            throw .invalid(field: "private_key", reason: "is \(bytes.count) bytes long (at most \(Self.maxBytes))")
        }
        if let reason = PEMBlock.problem(in: bytes, labels: Self.keyLabels) {
            throw .invalid(field: "private_key", reason: reason)
        }
        pem = bytes
    }

    public var description: String { "<private key, \(pem.count) bytes>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["pem": description]) }
}
