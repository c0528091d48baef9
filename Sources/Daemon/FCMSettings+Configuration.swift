import FCMCore
import RelayCore

extension FCMSettings {
    /// The FCM part of the configuration: where FCM is, its connections per
    /// loop and answer timeout, APNs' connection timings, and a queue
    /// bounded by MAX_IN_FLIGHT, as an APNs pool's is.
    init(configuration: Configuration) {
        self.init()
        host = configuration.fcmHost.host
        port = configuration.fcmHost.port
        maxConnections = configuration.fcmMaxConnections
        answerTimeout = configuration.fcmAnswerTimeout
        connectTimeout = configuration.apnsConnectTimeout
        pingInterval = configuration.apnsPingInterval
        pingTimeout = configuration.apnsPingTimeout
        maxQueued = configuration.maxInFlight
    }
}
