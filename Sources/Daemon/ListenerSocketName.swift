import EventLoop
import RelayCore

/// The relay's listeners as its systemd `.socket` units name their sockets
/// (`FileDescriptorName=`, read from LISTEN_FDNAMES): a listener whose
/// socket is passed accepts on it; the others bind their own address.
enum ListenerSocketName: String, CaseIterable, Sendable {
    case webPush = "webpush"
    case api
    case metrics

    /// Every name, in the order the errors list them.
    static let all = allCases.map(\.rawValue)

    /// Why a socket of this name cannot serve `configuration`, nil when it
    /// can: the provider API and the metrics are switched on by their port
    /// variable, and a socket does not switch them on behind the
    /// operator's back (an API on a socket nobody configured could take
    /// pushes without a key).
    func problem(with configuration: Configuration) -> String? {
        switch self {
        case .webPush:
            return nil
        case .api where configuration.apiPort == nil:
            return "systemd passed a socket named `api` but API_PORT is not set: set API_PORT to switch the "
                + "provider API on, or remove the socket from the service"
        case .metrics where configuration.metricsPort == nil:
            return "systemd passed a socket named `metrics` but METRICS_PORT is not set: set METRICS_PORT to switch "
                + "the metrics on, or remove the socket from the service"
        case .api, .metrics:
            return nil
        }
    }

    /// `configuration` with this listener's address and port those of the
    /// socket it accepts on, so what checks an address (an API without keys
    /// only on loopback) and every log line see where it really listens.
    func configuration(_ configuration: Configuration, listeningOn address: SocketAddress) -> Configuration {
        var changed = configuration
        switch self {
        case .webPush:
            changed.bindAddress = address.ipText
            changed.port = address.port
        case .api:
            changed.apiBindAddress = address.ipText
            changed.apiPort = address.port
        case .metrics:
            changed.metricsBindAddress = address.ipText
            changed.metricsPort = address.port
        }
        return changed
    }
}
