/// `API_CRT_FILENAME`, `API_KEY_FILENAME`, `API_CLIENT_CA_FILENAME`: TLS on
/// the provider API's port (HTTP/2 by ALPN `h2`, HTTP/1.1 by `http/1.1`).
/// Unlike CRT_FILENAME's, the files are named on purpose: set and
/// unreadable is a startup error, not plain HTTP.
public struct APITLSFiles: Sendable, Equatable {
    public var certificateFile: String?
    public var keyFile: String?
    /// PEM CAs a client certificate must be issued by; clients are asked
    /// for one and need not present it (a client without one authenticates
    /// otherwise).
    public var clientCAFile: String?

    public init(certificateFile: String? = nil, keyFile: String? = nil, clientCAFile: String? = nil) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
    }

    /// The certificate and key, when TLS is on.
    public var serverFiles: (certificate: String, key: String)? {
        guard let certificateFile, let keyFile else { return nil }
        return (certificateFile, keyFile)
    }

    /// Their rows of `Configuration.variables`, in the table's place after `API_BIND`.
    static let variables: [ConfigurationVariable] = [
        .init(name: "API_CRT_FILENAME", defaultText: "unset (plain HTTP)", help: "serve the API over TLS with this certificate (HTTP/2 by ALPN h2, or by its preface without ALPN; HTTP/1.1); SIGHUP reloads it"),
        .init(name: "API_KEY_FILENAME", defaultText: "unset", help: "private key for API_CRT_FILENAME"),
        .init(name: "API_CLIENT_CA_FILENAME", defaultText: "unset (no client certificates)", help: "ask API clients for a certificate issued by these CAs (PEM); optional for the client"),
    ]

    /// Takes the three variables from `value`; a certificate without its
    /// key (or the reverse), or client CAs without TLS, is refused.
    mutating func apply(_ value: (String) -> String?) throws(ConfigurationError) {
        if let text = value("API_CRT_FILENAME") { certificateFile = text }
        if let text = value("API_KEY_FILENAME") { keyFile = text }
        if let text = value("API_CLIENT_CA_FILENAME") { clientCAFile = text }
        if (certificateFile == nil) != (keyFile == nil) {
            throw ConfigurationError(variable: certificateFile == nil ? "API_CRT_FILENAME" : "API_KEY_FILENAME",
                                     message: "TLS on the API port needs API_CRT_FILENAME and API_KEY_FILENAME together")
        }
        if clientCAFile != nil && certificateFile == nil {
            throw ConfigurationError(variable: "API_CLIENT_CA_FILENAME",
                                     message: "client certificates need TLS on the API port (API_CRT_FILENAME, API_KEY_FILENAME)")
        }
    }
}
