import Foundation
import HTTP1
import Observability
import Relay
import RelayCore
import TLS

/// The relay's own HTTPS (`CRT_FILENAME`, `KEY_FILENAME`; the API port's
/// `API_CRT_FILENAME`, `API_KEY_FILENAME`): at start, and on SIGHUP, with
/// the apps (certbot renews the files; no restart).
extension Daemon {
    /// The certificate when its file exists (the Go relay's rule), nil
    /// for plain HTTP; one line naming both files when it does not load.
    func loadServerCertificate(_ configuration: Configuration) throws(StartupFailure) -> ServerCertificate? {
        guard FileManager.default.fileExists(atPath: configuration.tlsCertificateFile) else { return nil }
        do {
            return try ServerCertificate(certificateFile: configuration.tlsCertificateFile,
                                         keyFile: configuration.tlsKeyFile)
        } catch {
            throw StartupFailure("CRT_FILENAME/KEY_FILENAME (\(configuration.tlsCertificateFile), "
                + "\(configuration.tlsKeyFile)): \(error)")
        }
    }

    /// The API port's certificate with API_CRT_FILENAME (ALPN h2, then
    /// http/1.1; client certificates asked for with API_CLIENT_CA_FILENAME),
    /// nil for plain HTTP; one line naming the files when they do not load.
    func loadAPICertificate(_ configuration: Configuration) throws(StartupFailure) -> ServerCertificate? {
        guard let files = configuration.apiTLS.serverFiles else { return nil }
        do {
            return try ServerCertificate(certificateFile: files.certificate, keyFile: files.key, alpn: ["h2", "http/1.1"],
                                         clientCAFile: configuration.apiTLS.clientCAFile)
        } catch {
            throw StartupFailure("API_CRT_FILENAME/API_KEY_FILENAME (\(files.certificate), \(files.key)"
                + (configuration.apiTLS.clientCAFile.map { ", API_CLIENT_CA_FILENAME \($0)" } ?? "") + "): \(error)")
        }
    }

    /// SIGHUP: the files again; changed ones that load go to every loop
    /// for the next handshakes, others leave the running certificate in
    /// place with an error line (as a reload of the apps does).
    func reloadServerCertificate<Handler>(_ certificate: inout ServerCertificate?, named variables: String = "CRT_FILENAME/KEY_FILENAME",
                                          serving listener: HTTP1Listener<Handler>, logger: Logger) {
        guard var reloaded = certificate else { return }
        let files = "\(variables) (\(reloaded.certificateFile), \(reloaded.keyFile))"
        switch reloaded.reload(now: Int(Glibc.time(nil))) {
        case .unchanged:
            logger.info("SIGHUP: \(files) unchanged")
        case .replaced:
            listener.replaceTLSContext(reloaded.context)
            certificate = reloaded
            logger.info("SIGHUP: \(files) reloaded: new connections get the certificate that expires "
                + certificateDateText(reloaded.notAfter))
        case .failed(let reason):
            logger.error("SIGHUP: \(files) did not load, the running certificate stays: \(reason)")
        }
    }
}
