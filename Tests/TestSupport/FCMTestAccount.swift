import FCMCore

/// A service account for the tests that only carry one (a fake sender's
/// messages, an app's FCM credentials): the key is a PEM block of the
/// right shape, not a key, and its body is distinctive, so a test can
/// check that no text shows it.
public enum FCMTestAccount {
    public static let keyBody = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCSecretFakeKeyBodyNeverShown0123456789"

    public static func make(project: String = "toot-relay-test", keyID: String = "0123456789abcdef",
                            email: String = "relay@toot-relay-test.iam.gserviceaccount.com") -> FCMServiceAccount {
        let key = try! ServiceAccountPrivateKey(
            pemText: "-----BEGIN PRIVATE KEY-----\n\(keyBody)\n-----END PRIVATE KEY-----\n")
        return FCMServiceAccount(projectID: project, privateKeyID: keyID, privateKey: key, clientEmail: email,
                                 tokenEndpoint: .google)
    }
}
