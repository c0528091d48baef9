import FCMCore
import TLS

/// A service account the emulator's token endpoint trusts: the account as
/// its file describes it, and the key its assertions are checked with (the
/// public half of the file's private key, as Google holds it).
public final class FCMTrustedAccount: Sendable {
    public let account: FCMServiceAccount
    let verifier: RS256Verifier

    /// Reads the key of `account`; a key RS256 cannot use is refused.
    public init(_ account: FCMServiceAccount) throws(APNsEmulatorError) {
        self.account = account
        do {
            verifier = try RS256Verifier(privateKeyPEM: account.privateKey.pem)
        } catch {
            throw .invalidConfiguration("service account \(account): \(error)")
        }
    }
}

/// What the emulator plays of FCM HTTP v1 besides APNs, on the same listener.
public struct FCMEmulatorConfiguration: Sendable {
    /// The accounts the token endpoint trusts (their `private_key_id`s must
    /// differ: the assertion's `kid` picks one).
    public var serviceAccounts: [FCMServiceAccount]
    /// The `expires_in` of every access token issued (Google: 3599).
    public var tokenLifetime: Int
    /// Keep every accepted message for `receivedFCMMessages()`.
    public var recordMessages: Bool

    public init(serviceAccounts: [FCMServiceAccount], tokenLifetime: Int = 3600, recordMessages: Bool = false) {
        self.serviceAccounts = serviceAccounts
        self.tokenLifetime = tokenLifetime
        self.recordMessages = recordMessages
    }
}
