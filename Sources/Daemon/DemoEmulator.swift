import APNsCore
import APNs
import Observability
import RelayCore

/// The APNs and FCM emulator of `--demo DIR` (scripts/demo). The executable
/// gives it (toot-relay runs the apns-emulator executable as a child
/// process), so that neither this library nor the production binary links
/// an emulator.
public protocol DemoEmulator: AnyObject {
    /// Starts it on 127.0.0.1 with the throwaway keys of
    /// scripts/make-test-certs in `certificates`: as APNs with its server
    /// certificate and the client certificates of their CA, as FCM with a
    /// throwaway service account it trusts (its JSON file written into
    /// `certificates`); each notification and FCM message it accepts is
    /// printed as a JSON line on standard output.
    func start(certificates: String) throws(StartupFailure) -> DemoEmulatorEndpoint
    /// Stops it: the last step of shutdown, once nothing is sent to it.
    func stop()
}

/// Where the demo's emulator listens, and the service account's JSON file
/// (its `token_uri` the emulator's token endpoint) that FCM takes from it.
public struct DemoEmulatorEndpoint: Sendable {
    public let port: UInt16
    public let fcmServiceAccountFile: String

    public init(port: UInt16, fcmServiceAccountFile: String) {
        self.port = port
        self.fcmServiceAccountFile = fcmServiceAccountFile
    }
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
    /// relay pointed at it for APNs and FCM, the throwaway p12 and service
    /// account the default app's credentials (unless the environment names
    /// others).
    func startDemoEmulator(_ demo: Demo, values: [String: String], configuration: inout Configuration,
                           logger: Logger) throws(StartupFailure) {
        let path = { (name: String) in demo.certificates + "/" + name }
        let emulator = try demo.emulator.start(certificates: demo.certificates)
        let host = HostAndPort(host: "127.0.0.1", port: emulator.port)
        configuration.productionHost = host
        configuration.developmentHost = host
        configuration.fcmHost = host
        configuration.caFile = path("ca.pem")
        if values["P12_FILENAME"] == nil && values["P12_BASE64"] == nil && values["TOKEN_AUTH_KEY_FILENAME"] == nil {
            configuration.p12File = path("client.p12")
            if values["P12_PASSWORD"] == nil { configuration.p12Password = "secret" }
        }
        if values["FCM_CREDENTIALS_FILE"] == nil && values["FCM_CREDENTIALS_BASE64"] == nil {
            configuration.fcmCredentialsFile = emulator.fcmServiceAccountFile
        }
        logger.info("demo: APNs and FCM emulator on \(host)")
    }
}
