import HTTP2
import HTTPCore

/// An HTTP/2 stream's request and answer in the listener's HTTP/1.1 terms,
/// so that one request handler serves both protocols.
package enum HTTP2Exchange {
    /// The request as the HTTP/1.1 path builds it: `:path` as the target,
    /// `:authority` as `host` when the client sent no `host` (RFC 9113
    /// §8.3.1: a client may send either), the regular fields as received.
    package static func request(_ request: HTTP2Request, clientCertificateSHA256: [UInt8]?) -> HTTP1Request {
        var headers = HTTPHeaders()
        var hasHost = false
        for field in request.headers {
            if field.name == "host" { hasHost = true }
            headers.append(name: field.name, value: field.value)
        }
        if !hasHost, let authority = request.authority { headers.append(name: "host", value: authority) }
        return HTTP1Request(method: request.method, target: request.path, version: .http1_1, headers: headers,
                            body: request.body, keepAlive: true, clientCertificateSHA256: clientCertificateSHA256)
    }

    /// Fields HTTP/2 forbids in a message (RFC 9113 §8.2.2); the handler's
    /// HTTP/1.1 framing (content-length) is written here instead.
    private static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length",
    ]

    /// The answer's header fields for HTTP/2: names lowercase, the
    /// connection-specific ones dropped, `content-length` of the body when
    /// the status may carry content (RFC 9110 §8.6).
    package static func responseFields(_ response: HTTP1Response) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(response.headers.count + 1)
        for field in response.headers {
            let name = field.name.lowercased()
            guard !connectionSpecific.contains(name) else { continue }
            fields.append((name: name, value: field.value))
        }
        let mayHaveContent = !(100...199).contains(response.status) && response.status != 204 && response.status != 304
        if mayHaveContent { fields.append((name: "content-length", value: String(response.body.count))) }
        return fields
    }
}
