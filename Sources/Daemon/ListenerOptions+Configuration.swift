import HTTPCore
import RelayCore

extension ListenerOptions {
    /// The listener part of the configuration: the Web Push port's address,
    /// limits, timeouts and connection cap.
    init(configuration: Configuration) {
        self.init(
            bindAddress: configuration.bindAddress, port: configuration.port, reusePort: configuration.reusePort,
            limits: HTTP1Limits(maxHeaderBytes: configuration.maxHeaderBytes, maxBodyBytes: configuration.maxBodyBytes),
            timeouts: .init(header: configuration.headerTimeout, body: configuration.bodyTimeout,
                            keepAlive: configuration.keepAliveTimeout),
            maxConnections: configuration.maxConnections)
    }
}
