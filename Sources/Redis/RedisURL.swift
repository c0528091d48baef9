import EventLoop

/// Where a Redis server is and how to log in to it:
/// `redis://[[user]:password@]host[:port][/db]` or
/// `unix://[[user]:password@]/path/to/redis.sock[?db=N]`.
///
/// Read strictly, as RFC 3986 §3 lays a URL out, so that a typo stops the
/// relay at start-up instead of sending a password somewhere else:
/// - The scheme is `redis` or `unix`, in any case (§3.1); `rediss` (TLS)
///   is refused by name.
/// - The user and password are percent-decoded (§2.1, as redis-py, Jedis
///   and node-redis read them). The userinfo splits at its first `:`:
///   the user before it (empty: Redis' default user, `AUTH password`),
///   the password after it, where further `:` are the password's own. A
///   userinfo without `:` is refused rather than guessed (a user with no
///   password, or a password written where the user goes?). An `@`, `/`,
///   `?` or `#` in either must be percent-encoded, since each would end
///   the userinfo (§3.2): an `@` too many, or an `@` after the authority,
///   is refused with that advice. Other printable characters are taken as
///   they are, encoded or not.
/// - The host is a host name (RFC 1123), an IPv4 address, or an IPv6
///   address in brackets (§3.2.2); the port 1 to 65535, 6379 when absent.
/// - The database is the path (`/2`), 0 when absent; on `unix://` the query
///   `db=N`, its only parameter. At most 2,147,483,647 (Redis' `databases`
///   is a C int); whether the server has that many is for `SELECT` to say.
/// - A socket path is percent-decoded, absolute, names a file (not `/` or
///   a directory) and fits `sockaddr_un` (107 bytes and a NUL).
/// - No fragment, no query on `redis://`, no white space or bytes outside
///   ASCII, at most 4,096 bytes.
///
/// Errors (`RedisURLError`) never quote the URL; `description` shows the
/// password as `<hidden>`.
public struct RedisURL: Equatable, Sendable, CustomStringConvertible {
    public enum Endpoint: Equatable, Sendable {
        case tcp(host: String, port: UInt16)
        case unix(path: String)
    }

    public let endpoint: Endpoint
    /// The ACL user (Redis 6+: `AUTH user password`); nil for the default user.
    public let user: String?
    /// nil: no `AUTH`.
    public let password: RedisPassword?
    /// 0: no `SELECT`.
    public let database: Int

    public static let defaultPort: UInt16 = 6379
    public static let maxDatabase = Int(Int32.max)
    public static let maxLength = 4096
    /// `sun_path` is 108 bytes, the last one the NUL.
    public static let maxSocketPathBytes = 107

    public init(endpoint: Endpoint, user: String? = nil, password: RedisPassword? = nil, database: Int = 0) {
        precondition(user == nil || password != nil, "RedisURL: a user needs a password")
        precondition((0...Self.maxDatabase).contains(database), "RedisURL: database \(database) out of range")
        self.endpoint = endpoint
        self.user = user
        self.password = password
        self.database = database
    }

    public init(parsing text: String) throws(RedisURLError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= Self.maxLength else { throw .tooLong(limit: Self.maxLength) }
        if let offset = bytes.firstIndex(where: { $0 <= 0x20 || $0 >= 0x7F }) { throw .invalidCharacter(offset: offset) }

        guard let schemeEnd = bytes.firstRange(of: Array("://".utf8))?.lowerBound else { throw .missingScheme }
        let scheme = String(decoding: bytes[..<schemeEnd], as: UTF8.self).lowercased()
        let isUnix: Bool
        switch scheme {
        case "redis": isUnix = false
        case "unix": isUnix = true
        case "rediss": throw .tlsNotSupported
        default:
            // Named only when it is a scheme at all (RFC 3986 §3.1: a letter,
            // then letters, digits, + - .): anything else before :// may be
            // a mistyped userinfo.
            let first = scheme.utf8.first ?? 0
            let isScheme = scheme.utf8.count <= 16 && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first)
                && scheme.utf8.allSatisfy { isLowerAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
            throw isScheme ? .unknownScheme(scheme) : .missingScheme
        }

        var rest = bytes[(schemeEnd + 3)...]
        if rest.contains(UInt8(ascii: "#")) { throw .fragment }
        // The authority ends at the first / ? or # (RFC 3986 §3.2).
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if !authority.contains(UInt8(ascii: "@")) && rest.contains(UInt8(ascii: "@")) && (!isUnix || !authority.isEmpty) {
            throw .unencodedDelimiterInUserinfo
        }

        var user: String?
        var password: RedisPassword?
        var hostPort = authority
        if let at = authority.firstIndex(of: UInt8(ascii: "@")) {
            let userinfo = authority[..<at]
            hostPort = authority[(at + 1)...]
            if hostPort.contains(UInt8(ascii: "@")) { throw .atSignInUserinfo }
            guard let colon = userinfo.firstIndex(of: UInt8(ascii: ":")) else { throw .userWithoutPassword }
            guard let userBytes = percentDecoded(userinfo[..<colon]) else { throw .badPercentEncoding(.user) }
            guard let passwordBytes = percentDecoded(userinfo[(colon + 1)...]) else { throw .badPercentEncoding(.password) }
            guard !passwordBytes.isEmpty else { throw .emptyPassword }
            if !userBytes.isEmpty {
                guard let name = String(validating: userBytes, as: UTF8.self) else { throw .userNotUTF8 }
                user = name
            }
            password = RedisPassword(passwordBytes)
        }

        if isUnix {
            guard hostPort.isEmpty else { throw .unixWithHost }
            let pathEnd = rest.firstIndex(of: UInt8(ascii: "?")) ?? rest.endIndex
            guard let path = percentDecoded(rest[..<pathEnd]) else { throw .badPercentEncoding(.path) }
            guard path.first == UInt8(ascii: "/"), path.last != UInt8(ascii: "/"), !path.contains(0),
                  let pathText = String(validating: path, as: UTF8.self) else { throw .badSocketPath }
            guard path.count <= Self.maxSocketPathBytes else { throw .socketPathTooLong(limit: Self.maxSocketPathBytes) }
            var database = 0
            if pathEnd < rest.endIndex {
                var seen = false
                for parameter in rest[(pathEnd + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
                    guard parameter.starts(with: Array("db=".utf8)) else { throw .badQueryParameter }
                    guard !seen else { throw .repeatedDatabase }
                    seen = true
                    guard let number = Self.databaseNumber(parameter.dropFirst(3)) else { throw .badDatabase }
                    database = number
                }
            }
            self.init(endpoint: .unix(path: pathText), user: user, password: password, database: database)
            return
        }

        let (host, port) = try Self.hostAndPort(hostPort)
        var database = 0
        if rest.contains(UInt8(ascii: "?")) { throw .queryNotAllowed }
        if rest.count > 1 {
            guard let number = Self.databaseNumber(rest.dropFirst()) else { throw .badDatabase }
            database = number
        }
        self.init(endpoint: .tcp(host: host, port: port), user: user, password: password, database: database)
    }

    /// `host[:port]`, `[v6][:port]`.
    private static func hostAndPort(_ text: ArraySlice<UInt8>) throws(RedisURLError) -> (String, UInt16) {
        guard !text.isEmpty else { throw .missingHost }
        var host: String
        var afterHost: ArraySlice<UInt8>
        if text.first == UInt8(ascii: "[") {
            guard let close = text.firstIndex(of: UInt8(ascii: "]")) else { throw .badHost }
            host = String(decoding: text[(text.startIndex + 1)..<close], as: UTF8.self)
            guard let address = SocketAddress(ip: host, port: 0), address.family == .ipv6 else { throw .badHost }
            afterHost = text[(close + 1)...]
        } else {
            let colon = text.firstIndex(of: UInt8(ascii: ":")) ?? text.endIndex
            host = String(decoding: text[..<colon], as: UTF8.self)
            guard !host.isEmpty else { throw .missingHost }
            guard Resolver.isValidHostName(host) else { throw .badHost }
            afterHost = text[colon...]
        }
        guard !afterHost.isEmpty else { return (host, defaultPort) }
        guard afterHost.first == UInt8(ascii: ":") else { throw .badHost }
        let digits = afterHost.dropFirst()
        guard (1...5).contains(digits.count), digits.allSatisfy(isDigit),
              let port = UInt16(String(decoding: digits, as: UTF8.self)), port != 0 else { throw .badPort }
        return (host, port)
    }

    /// Decimal digits, 0 to `maxDatabase`, no sign (at most 10 digits, so
    /// no overflow on the way).
    private static func databaseNumber(_ digits: ArraySlice<UInt8>) -> Int? {
        guard (1...10).contains(digits.count), digits.allSatisfy(isDigit) else { return nil }
        var value = 0
        for digit in digits { value = value * 10 + Int(digit - UInt8(ascii: "0")) }
        return value <= maxDatabase ? value : nil
    }

    /// The URL with the password as `<hidden>`: what logs may show.
    public var description: String {
        var userinfo = ""
        if let password {
            userinfo = (user.map { percentEncoded(Array($0.utf8)) } ?? "") + ":" + password.description + "@"
        }
        switch endpoint {
        case .tcp(let host, let port):
            let shownHost = host.contains(":") ? "[\(host)]" : host
            return "redis://\(userinfo)\(shownHost):\(port)/\(database)"
        case .unix(let path):
            return "unix://\(userinfo)\(percentEncoded(Array(path.utf8), keeping: UInt8(ascii: "/")))"
                + (database == 0 ? "" : "?db=\(database)")
        }
    }
}

private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

private func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
    isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
}

/// RFC 3986 §2.1 decoding; nil for a `%` not followed by two hex digits.
private func percentDecoded(_ text: ArraySlice<UInt8>) -> [UInt8]? {
    var result: [UInt8] = []
    result.reserveCapacity(text.count)
    var index = text.startIndex
    while index < text.endIndex {
        let byte = text[index]
        guard byte == UInt8(ascii: "%") else {
            result.append(byte)
            index += 1
            continue
        }
        guard index + 2 < text.endIndex, let high = hexValue(text[index + 1]), let low = hexValue(text[index + 2]) else { return nil }
        result.append(high << 4 | low)
        index += 3
    }
    return result
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// Everything but RFC 3986's unreserved characters (and `keeping`)
/// percent-encoded, so a name shown in a URL reads back as itself.
private func percentEncoded(_ bytes: [UInt8], keeping kept: UInt8? = nil) -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    var result: [UInt8] = []
    for byte in bytes {
        if isLowerAlphanumeric(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~") || byte == kept {
            result.append(byte)
        } else {
            result += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
        }
    }
    return String(decoding: result, as: UTF8.self)
}
