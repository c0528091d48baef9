import FCMCore

/// A service account holding the test RSA key (scripts/make-test-certs),
/// its token endpoint on the loopback.
public func testServiceAccount(keyID: String = "0123456789abcdef0123456789abcdef01234567",
                               keyFile: String = TestCertificates.serviceAccountKeyP8) throws -> FCMServiceAccount {
    let pem = String(decoding: try TestCertificates.bytes(keyFile), as: UTF8.self)
    return FCMServiceAccount(
        projectID: "toot-relay-test", privateKeyID: keyID, privateKey: try ServiceAccountPrivateKey(pemText: pem),
        clientEmail: "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com",
        tokenEndpoint: OAuthTokenEndpoint(host: "127.0.0.1", port: 8443, target: "/token"))
}
