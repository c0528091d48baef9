@testable import APNsEmulator
import Base64URL
import FCMCore
import JSON
import TLS
import TestSupport

/// Service accounts, signed assertions and messages for the FCM tests,
/// with the test RSA key of scripts/make-test-certs.
enum FCMFixture {
    static let project = "toot-relay-test"
    static let keyID = "0123456789abcdef0123456789abcdef01234567"
    static let clientEmail = "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com"
    static let tokenURI = "https://127.0.0.1:8443/token"
    static let registrationToken = "cXyzAbc123:APA91bHunt3rXyz-_0123456789"

    static func account(keyID: String = keyID, project: String = project, clientEmail: String = clientEmail,
                        tokenURI: String = tokenURI) throws -> FCMServiceAccount {
        let pem = String(decoding: try TestCertificates.bytes(TestCertificates.serviceAccountKeyP8), as: UTF8.self)
        var text: [UInt8] = []
        appendJSONObject([
            ("type", .string("service_account")), ("project_id", .string(project)), ("private_key_id", .string(keyID)),
            ("private_key", .string(pem)), ("client_email", .string(clientEmail)), ("token_uri", .string(tokenURI)),
        ], to: &text)
        return try FCMServiceAccount(json: text)
    }

    static func trusted(keyID: String = keyID, project: String = project) throws -> FCMTrustedAccount {
        try FCMTrustedAccount(account(keyID: keyID, project: project))
    }

    static func signer() throws -> RS256Signer {
        try RS256Signer(privateKeyPEM: TestCertificates.bytes(TestCertificates.serviceAccountKeyP8))
    }

    /// A JWT as Google's libraries make it for `account`, with `header`'s
    /// and `claims`' members replaced (nil: left out).
    static func assertion(for account: FCMServiceAccount, now: Int, header changes: [String: JSONValue?] = [:],
                          claims claimChanges: [String: JSONValue?] = [:], corruptSignature: Bool = false) throws -> [UInt8] {
        let header = apply(changes, to: [("alg", .string("RS256")), ("typ", .string("JWT")),
                                         ("kid", .string(account.privateKeyID))])
        let claims = apply(claimChanges, to: [
            ("iss", .string(account.clientEmail)), ("scope", .string(ServiceAccountAssertion.firebaseMessagingScope)),
            ("aud", .string(account.tokenEndpoint.uri)), ("iat", .number(String(now))),
            ("exp", .number(String(now + 3600))),
        ])
        var headerBytes: [UInt8] = []
        appendJSONObject(header, to: &headerBytes)
        var claimBytes: [UInt8] = []
        appendJSONObject(claims, to: &claimBytes)
        let input = Array((base64URLEncode(headerBytes) + "." + base64URLEncode(claimBytes)).utf8)
        var signature = try signer().sign(input)
        if corruptSignature { signature[0] ^= 1 }
        return input + Array(("." + base64URLEncode(signature)).utf8)
    }

    /// `grant_type=…&assertion=…`, as FCMCore writes it.
    static func tokenRequestBody(_ assertion: [UInt8], grantType: String = ServiceAccountAssertion.grantType) -> [UInt8] {
        Array("grant_type=\(formEncoded(grantType))&assertion=".utf8) + assertion
    }

    static func formEncoded(_ text: String) -> String {
        text.replacingColons
    }

    private static func apply(_ changes: [String: JSONValue?], to members: [(String, JSONValue)]) -> [(String, JSONValue)] {
        var result: [(String, JSONValue)] = []
        for (name, value) in members {
            if let change = changes[name] {
                if let change { result.append((name, change)) }
            } else {
                result.append((name, value))
            }
        }
        for (name, change) in changes where !members.contains(where: { $0.0 == name }) {
            if let change { result.append((name, change)) }
        }
        return result
    }

    /// The relay's message for `token`: a data message with Android options.
    static func message(token: String = registrationToken) -> [UInt8] {
        Array((#"{"message":{"token":"\#(token)","data":{"p":"abc","x":"1"},"#
            + #""android":{"ttl":"60s","collapse_key":"t","priority":"high"}}}"#).utf8)
    }
}

extension String {
    fileprivate var replacingColons: String {
        var text = ""
        for character in self { text += character == ":" ? "%3A" : String(character) }
        return text
    }
}

extension FCMRejection {
    /// The answer as the relay reads it (FCMCore).
    var readByRelay: FCMError? {
        guard case .failed(let error) = FCMSendAnswer(status: status, body: body) else { return nil }
        return error
    }
}
