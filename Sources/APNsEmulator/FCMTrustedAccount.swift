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
