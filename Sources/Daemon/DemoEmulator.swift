import APNsCore
import APNs
import Observability
import RelayCore

/// The APNs emulator of `--demo DIR` (scripts/demo). The executable gives
/// it (toot-relay runs the apns-emulator executable as a child process), so
/// that neither this library nor the production binary links an emulator.
public protocol DemoEmulator: AnyObject {
    /// Starts it on 127.0.0.1 with the throwaway certificates of
    /// scripts/make-test-certs in `certificates` (its server certificate,
    /// the client certificates of their CA), printing each notification it
    /// accepts as a JSON line on standard output; returns its port.
    func start(certificates: String) throws(StartupFailure) -> UInt16
    /// Stops it: the last step of shutdown, once nothing is sent to it.
    func stop()
}

/// `--demo DIR`: the relay on 127.0.0.1 (unless BIND says otherwise),
/// delivering to `emulator` with the throwaway certificates in `certificates`.
public struct Demo {
    let certificates: String
    let emulator: any DemoEmulator

    public init(certificates: String, emulator: any DemoEmulator) {
        self.certificates = certificates
        self.emulator = emulator
    }
}

extension Daemon {
    /// Demo: the emulator started, trusting the throwaway CA, with the
    /// relay pointed at it and the throwaway p12.
    func startDemoEmulator(_ demo: Demo, values: [String: String], configuration: inout Configuration,
                           logger: Logger) throws(StartupFailure) {
        let path = { (name: String) in demo.certificates + "/" + name }
        let host = HostAndPort(host: "127.0.0.1", port: try demo.emulator.start(certificates: demo.certificates))
        configuration.productionHost = host
        configuration.developmentHost = host
        configuration.caFile = path("ca.pem")
        if values["P12_FILENAME"] == nil && values["P12_BASE64"] == nil && values["TOKEN_AUTH_KEY_FILENAME"] == nil {
            configuration.p12File = path("client.p12")
            if values["P12_PASSWORD"] == nil { configuration.p12Password = "secret" }
        }
        logger.info("demo: APNs emulator on \(host)")
    }
}
