import APNsCore

/// Where the emulator listens, with which certificate, what it checks and
/// how it behaves.
public struct APNsEmulatorConfiguration: Sendable {
    /// Numeric address to listen on (tests: 127.0.0.1).
    public var host: String
    /// 0 picks a free port: read `APNsEmulator.port` after `start()`.
    public var port: UInt16
    public var certificateFile: String
    public var privateKeyFile: String
    public var authentication: APNsEmulatorAuthentication
    /// The APNs environment the emulator plays: provider keys scoped to the
    /// other one are refused.
    public var environment: APNsEnvironment
    /// The app the device tokens belong to: another `apns-topic` is
    /// 400 DeviceTokenNotForTopic. nil: any topic the credentials allow.
    public var expectedTopic: String?
    /// Loop threads, each with its own SO_REUSEPORT listener.
    public var threads: Int
    /// Keep every accepted notification for `receivedNotifications()`.
    public var recordNotifications: Bool
    /// Connection-level events (accept, handshake failure, close) on stderr;
    /// never per request.
    public var log: Bool
    /// The behaviour at start (and after `reset()`).
    public var behavior: APNsEmulatorBehavior
    /// Seconds a provider key must wait between two new tokens (a new
    /// `iat`); one sooner is 429 TooManyProviderTokenUpdates, as APNs
    /// answers a provider that renews more often than every 20 minutes
    /// (`ProviderTokenUpdates`). 0: not enforced.
    public var tokenUpdateInterval: Int
    /// FCM HTTP v1 on the same listener (its token endpoint and
    /// `messages:send`); nil: APNs only.
    public var fcm: FCMEmulatorConfiguration?

    public init(host: String = "127.0.0.1", port: UInt16 = 0, certificateFile: String, privateKeyFile: String,
                authentication: APNsEmulatorAuthentication, environment: APNsEnvironment = .production,
                expectedTopic: String? = nil, threads: Int = 1,
                recordNotifications: Bool = false, log: Bool = false,
                behavior: APNsEmulatorBehavior = APNsEmulatorBehavior(), tokenUpdateInterval: Int = 0,
                fcm: FCMEmulatorConfiguration? = nil) {
        self.host = host
        self.port = port
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.authentication = authentication
        self.environment = environment
        self.expectedTopic = expectedTopic
        self.threads = threads
        self.recordNotifications = recordNotifications
        self.log = log
        self.behavior = behavior
        self.tokenUpdateInterval = tokenUpdateInterval
        self.fcm = fcm
    }
}
