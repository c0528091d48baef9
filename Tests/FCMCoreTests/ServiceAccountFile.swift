// A service account's file as the Firebase console writes it, with fields
// to change, for the tests. The key is a PEM block of the right shape, not
// a key: FCMCore checks the shape only (TLS reads the key).

import FCMCore

/// The base64 body of the fake key: distinctive runs to look for in
/// descriptions that must never show it.
let fakeKeyBody = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDSecretKeyMaterialA",
    "QmFzZTY0Qm9keU9mQVRocm93YXdheUtleVRoYXROZXZlclNob3dzSW5BbkVycm9yWA==",
]
let fakeKeyPEM = "-----BEGIN PRIVATE KEY-----\n" + fakeKeyBody.joined(separator: "\n") + "\n-----END PRIVATE KEY-----\n"

/// The members of a console-made file, in the console's order.
let consoleFields: [(String, String)] = [
    ("type", "service_account"),
    ("project_id", "toot-relay-test"),
    ("private_key_id", "0123456789abcdef0123456789abcdef01234567"),
    ("private_key", fakeKeyPEM),
    ("client_email", "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com"),
    ("client_id", "123456789012345678901"),
    ("auth_uri", "https://accounts.google.com/o/oauth2/auth"),
    ("token_uri", "https://oauth2.googleapis.com/token"),
    ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
    ("client_x509_cert_url",
     "https://www.googleapis.com/robot/v1/metadata/x509/firebase-adminsdk-abc12%40toot-relay-test.iam.gserviceaccount.com"),
    ("universe_domain", "googleapis.com"),
]

/// The file's text with `replacing` members' raw JSON values (nil: left
/// out), pretty-printed as the console does (two-space indent).
func serviceAccountJSON(replacing changes: [String: String?] = [:]) -> String {
    var members: [String] = []
    for (name, value) in consoleFields {
        if let change = changes[name] {
            if let raw = change { members.append("  \"\(name)\": \(raw)") }
        } else {
            members.append("  \"\(name)\": \(jsonString(value))")
        }
    }
    return "{\n" + members.joined(separator: ",\n") + "\n}\n"
}

/// `text` as a JSON string literal.
func jsonString(_ text: String) -> String {
    var escaped = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": escaped += "\\\""
        case "\\": escaped += "\\\\"
        case "\n": escaped += "\\n"
        case _ where scalar.value < 0x20: escaped += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
            + String(scalar.value, radix: 16)
        default: escaped.unicodeScalars.append(scalar)
        }
    }
    return escaped + "\""
}

func readServiceAccount(_ text: String) throws(FCMServiceAccountError) -> FCMServiceAccount {
    try FCMServiceAccount(json: Array(text.utf8))
}

func consoleAccount() throws -> FCMServiceAccount {
    try readServiceAccount(serviceAccountJSON())
}
