/// Why a text is not a Redis URL (`RedisURL.init(parsing:)`).
///
/// A message never quotes the URL, nor any part of it but a scheme: a
/// password with an unencoded `/`, `?`, `#` or `@` ends up in whatever part
/// the parser took it for (the host, the database, the query), so quoting
/// any of them could put the password in a log.
public enum RedisURLError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Which part of the URL a percent-encoding problem is in.
    public enum Part: String, Sendable {
        case user, password
        case path = "socket path"
    }

    case empty
    case tooLong(limit: Int)
    /// White space, a control character or a byte outside ASCII, at a
    /// 0-based byte offset (URLs are ASCII: RFC 3986 §2; anything else is
    /// percent-encoded).
    case invalidCharacter(offset: Int)
    case missingScheme
    case unknownScheme(String)
    case tlsNotSupported
    case fragment
    /// An `@` after the authority when the authority has none: a `/`, `?`
    /// or `#` in the password cut the authority short.
    case unencodedDelimiterInUserinfo
    case atSignInUserinfo
    case userWithoutPassword
    case emptyPassword
    case badPercentEncoding(Part)
    case userNotUTF8
    case missingHost
    case badHost
    case badPort
    case badDatabase
    case queryNotAllowed
    case unixWithHost
    case badSocketPath
    case socketPathTooLong(limit: Int)
    case badQueryParameter
    case repeatedDatabase

    public var description: String {
        "invalid Redis URL: " + reason + " (redis://[[user]:password@]host[:port][/db] or unix://[[user]:password@]/path/to/redis.sock[?db=N])"
    }

    private var reason: String {
        switch self {
        case .empty:
            "it is empty"
        case .tooLong(let limit):
            "it is longer than \(limit) bytes"
        case .invalidCharacter(let offset):
            "byte \(offset) is white space, a control character or not ASCII (percent-encode it, RFC 3986 §2.1)"
        case .missingScheme:
            "it does not start with redis:// or unix://"
        case .unknownScheme(let scheme):
            "the scheme \(scheme) is not redis or unix"
        case .tlsNotSupported:
            "rediss:// (TLS) is not supported: reach Redis over a private network or a unix socket"
        case .fragment:
            "it has a fragment (#…); a # in the password must be written %23"
        case .unencodedDelimiterInUserinfo:
            "a / ? or # in the user or password must be percent-encoded (%2F %3F %23)"
        case .atSignInUserinfo:
            "it has more than one @; an @ in the user or password must be written %40"
        case .userWithoutPassword:
            "the user has no password (user:password@, or :password@ for the default user)"
        case .emptyPassword:
            "the password is empty"
        case .badPercentEncoding(let part):
            "the \(part.rawValue) has a % not followed by two hex digits (a % itself is written %25)"
        case .userNotUTF8:
            "the user is not UTF-8 once percent-decoded"
        case .missingHost:
            "it names no host"
        case .badHost:
            "the host is neither a host name (RFC 1123) nor an IP address ([…] for IPv6)"
        case .badPort:
            "the port is not a number from 1 to 65535"
        case .badDatabase:
            "the database (the path after the host) is not a number from 0 to \(RedisURL.maxDatabase)"
        case .queryNotAllowed:
            "redis:// takes no query (the database goes in the path: redis://host/2)"
        case .unixWithHost:
            "a unix:// URL names no host or port: unix:///path/to/redis.sock"
        case .badSocketPath:
            "the socket path is empty, not absolute, a directory or holds a NUL byte"
        case .socketPathTooLong(let limit):
            "the socket path is longer than \(limit) bytes (the limit of sockaddr_un)"
        case .badQueryParameter:
            "the query takes only db=N"
        case .repeatedDatabase:
            "the query gives db more than once"
        }
    }
}
