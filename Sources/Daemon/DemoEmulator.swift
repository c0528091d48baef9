import APNs
import APNsEmulator
import EventLoop
import Observability
import Relay
import RelayCore

extension Daemon {
    /// Demo: an APNs emulator in this process on 127.0.0.1, trusting the
    /// throwaway CA, with the relay pointed at it and the throwaway p12.
    func startDemoEmulator(directory: String, values: [String: String], configuration: inout Configuration,
                                   logger: Logger) throws(StartupFailure) -> APNsEmulator {
        let path = { (name: String) in directory + "/" + name }
        let emulatorConfiguration = APNsEmulatorConfiguration(
            host: "127.0.0.1", port: 0, certificateFile: path("server.pem"), privateKeyFile: path("server.key"),
            authentication: .clientCertificate(caFile: path("ca.pem")))
        let emulator: APNsEmulator
        do {
            emulator = try APNsEmulator(configuration: emulatorConfiguration)
            emulator.onNotification = { notification in writeAll(1, notification.jsonLine + "\n") }
            try emulator.start()
        } catch {
            throw StartupFailure("demo APNs emulator: \(error)")
        }
        let host = HostAndPort(host: "127.0.0.1", port: emulator.port)
        configuration.productionHost = host
        configuration.developmentHost = host
        configuration.caFile = path("ca.pem")
        if values["P12_FILENAME"] == nil && values["P12_BASE64"] == nil && values["TOKEN_AUTH_KEY_FILENAME"] == nil {
            configuration.p12File = path("client.p12")
            if values["P12_PASSWORD"] == nil { configuration.p12Password = "secret" }
        }
        logger.info("demo: APNs emulator on \(host)")
        return emulator
    }
}
