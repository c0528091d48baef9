/// `host[:port]`, with IPv6 literals in brackets (`[::1]:8443`).
public struct HostAndPort: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init?(parsing text: String, defaultPort: UInt16 = 443) {
        var rest = Substring(text)
        let host: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            rest = rest[colon...]
        } else {
            host = rest
            rest = ""
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" }) else { return nil }
        var port = defaultPort
        if rest.hasPrefix(":") {
            guard let parsed = Self.port(parsing: rest.dropFirst()) else { return nil }
            port = parsed
        }
        self.host = String(host)
        self.port = port
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// A decimal port in 1...65535 (0 too with `allowingZero`), digits only.
    public static func port(parsing text: Substring, allowingZero: Bool = false) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let value = Int(text), ((allowingZero ? 0 : 1)...65535).contains(value) else { return nil }
        return UInt16(value)
    }
}
