import APNsCore
import RelayCore

extension APNsSettings {
    /// The APNs part of the configuration: hosts, timeouts, connections per
    /// pool, and a pool's queue bounded by MAX_IN_FLIGHT (a queue can never
    /// hold more than the relay lets wait in all).
    init(configuration: Configuration) {
        self.init()
        productionHost = configuration.productionHost
        developmentHost = configuration.developmentHost
        broadcastProductionHost = configuration.broadcastProductionHost
        broadcastDevelopmentHost = configuration.broadcastDevelopmentHost
        connectTimeout = configuration.apnsConnectTimeout
        answerTimeout = configuration.apnsAnswerTimeout
        pingInterval = configuration.apnsPingInterval
        pingTimeout = configuration.apnsPingTimeout
        maxConnectionsPerEnvironment = configuration.apnsMaxConnections
        maxQueuedPerEnvironment = configuration.maxInFlight
        idleTimeout = configuration.apnsIdleTimeout
    }
}
