import FCMCore

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
