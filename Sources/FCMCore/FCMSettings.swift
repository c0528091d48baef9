/// The FCM client's settings and the one home of their defaults, as
/// `APNsSettings` are APNs': where FCM is (`FCM_HOST`), how many
/// connections go there (`FCM_MAX_CONNECTIONS`), how long an answer may
/// take (`FCM_TIMEOUT`), and the connection timings. The defaults are
/// APNs' own, as the two clients pool and wait alike.
public struct FCMSettings: Sendable, Equatable {
    public static let defaultHost = "fcm.googleapis.com"

    public var host = FCMSettings.defaultHost
    public var port: UInt16 = 443
    /// Connections to FCM from one event loop (draining ones excluded).
    public var maxConnections = 4
    /// Messages waiting for a stream; beyond: `.overloaded`.
    public var maxQueued = 20_000
    /// From `send` to FCM's answer (a token request has as long).
    public var answerTimeout: Duration = .seconds(8)
    public var connectTimeout: Duration = .seconds(5)
    public var pingInterval: Duration = .seconds(60)
    public var pingTimeout: Duration = .seconds(5)
    public var backoffBase: Duration = .milliseconds(500)
    public var backoffCap: Duration = .seconds(15)

    public init() {}
}
