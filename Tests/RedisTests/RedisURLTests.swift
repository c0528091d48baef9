import Testing
@testable import Redis

@Suite("Redis URL")
struct RedisURLTests {
    struct Valid: Sendable, CustomTestStringConvertible {
        let text: String
        let endpoint: RedisURL.Endpoint
        var user: String?
        var password: [UInt8]?
        var database = 0
        var testDescription: String { text }
    }

    static let valid: [Valid] = [
        Valid(text: "redis://localhost", endpoint: .tcp(host: "localhost", port: 6379)),
        Valid(text: "redis://localhost/", endpoint: .tcp(host: "localhost", port: 6379)),
        Valid(text: "redis://127.0.0.1:6380/2", endpoint: .tcp(host: "127.0.0.1", port: 6380), database: 2),
        Valid(text: "REDIS://Redis.Example:6379/0", endpoint: .tcp(host: "Redis.Example", port: 6379)),
        Valid(text: "redis://h:1", endpoint: .tcp(host: "h", port: 1)),
        Valid(text: "redis://h:65535/2147483647", endpoint: .tcp(host: "h", port: 65535), database: 2_147_483_647),
        Valid(text: "redis://[::1]", endpoint: .tcp(host: "::1", port: 6379)),
        Valid(text: "redis://[::1]:6390/1", endpoint: .tcp(host: "::1", port: 6390), database: 1),
        Valid(text: "redis://:secret@localhost", endpoint: .tcp(host: "localhost", port: 6379), password: Array("secret".utf8)),
        Valid(text: "redis://relay:s3cr%40t%3A%2F%3f%23@redis.internal:6379/3",
              endpoint: .tcp(host: "redis.internal", port: 6379), user: "relay", password: Array("s3cr@t:/?#".utf8), database: 3),
        // Further colons belong to the password (the userinfo splits at its first).
        Valid(text: "redis://relay:a:b:c@h", endpoint: .tcp(host: "h", port: 6379), user: "relay", password: Array("a:b:c".utf8)),
        // RFC 3986's sub-delims, unencoded, are the password's own.
        Valid(text: "redis://:pa!$&'()*+,;=[]~word@h", endpoint: .tcp(host: "h", port: 6379), password: Array("pa!$&'()*+,;=[]~word".utf8)),
        Valid(text: "redis://u%C3%A9:p@h", endpoint: .tcp(host: "h", port: 6379), user: "ué", password: [UInt8(ascii: "p")]),
        // A password decodes to any bytes: AUTH is binary-safe.
        Valid(text: "redis://:%00%ff%2a@h", endpoint: .tcp(host: "h", port: 6379), password: [0, 0xFF, UInt8(ascii: "*")]),
        Valid(text: "unix:///run/redis/redis-server.sock", endpoint: .unix(path: "/run/redis/redis-server.sock")),
        Valid(text: "UNIX:///run/redis.sock?db=3", endpoint: .unix(path: "/run/redis.sock"), database: 3),
        Valid(text: "unix://:pw@/run/redis.sock?db=1", endpoint: .unix(path: "/run/redis.sock"), password: Array("pw".utf8), database: 1),
        Valid(text: "unix://relay:pw@/run/redis.sock", endpoint: .unix(path: "/run/redis.sock"), user: "relay", password: Array("pw".utf8)),
        Valid(text: "unix:///tmp/a%20b.sock", endpoint: .unix(path: "/tmp/a b.sock")),
        // systemd instance names put an @ in paths.
        Valid(text: "unix:///run/redis@main/redis.sock", endpoint: .unix(path: "/run/redis@main/redis.sock")),
        Valid(text: "unix:///" + String(repeating: "s", count: 106), endpoint: .unix(path: "/" + String(repeating: "s", count: 106))),
    ]

    @Test("well-formed URLs give their endpoint, user, password and database", arguments: valid)
    func parsesValid(_ example: Valid) throws {
        let url = try RedisURL(parsing: example.text)
        #expect(url.endpoint == example.endpoint)
        #expect(url.user == example.user)
        #expect(url.password?.bytes == example.password)
        #expect(url.database == example.database)
    }

    struct Invalid: Sendable, CustomTestStringConvertible {
        let text: String
        let error: RedisURLError
        var testDescription: String { text.count > 80 ? String(text.prefix(80)) + "…" : text }
    }

    /// Every URL here that has a password has `hunter2` in it, split
    /// anywhere, so the test can check that no message shows it.
    static let invalid: [Invalid] = [
        Invalid(text: "", error: .empty),
        Invalid(text: "redis://h/" + String(repeating: "0", count: 4090), error: .tooLong(limit: 4096)),
        Invalid(text: " redis://h", error: .invalidCharacter(offset: 0)),
        Invalid(text: "redis://h /0", error: .invalidCharacter(offset: 9)),
        Invalid(text: "redis://:hunter2\n@h", error: .invalidCharacter(offset: 16)),
        Invalid(text: "redis://:hünter2@h", error: .invalidCharacter(offset: 10)),
        Invalid(text: "localhost:6379", error: .missingScheme),
        Invalid(text: "hunter2@localhost", error: .missingScheme),
        Invalid(text: "relay:hunter2@localhost://", error: .missingScheme),
        Invalid(text: "http://h", error: .unknownScheme("http")),
        Invalid(text: "rediss://:hunter2@h", error: .tlsNotSupported),
        Invalid(text: "redis://h#x", error: .fragment),
        Invalid(text: "redis://:hun#ter2@h", error: .fragment),
        Invalid(text: "redis://:hun/ter2@h", error: .unencodedDelimiterInUserinfo),
        Invalid(text: "redis://:hun?ter2@h", error: .unencodedDelimiterInUserinfo),
        Invalid(text: "unix://:hun/ter2@/run/redis.sock", error: .unencodedDelimiterInUserinfo),
        Invalid(text: "redis://:hun@ter2@h", error: .atSignInUserinfo),
        Invalid(text: "redis://hunter2@h", error: .userWithoutPassword),
        Invalid(text: "redis://relay:@h", error: .emptyPassword),
        Invalid(text: "redis://:hun%2ter2@h", error: .badPercentEncoding(.password)),
        Invalid(text: "redis://:hunter2%@h", error: .badPercentEncoding(.password)),
        Invalid(text: "redis://:hunter2%4@h", error: .badPercentEncoding(.password)),
        Invalid(text: "redis://re%zzlay:hunter2@h", error: .badPercentEncoding(.user)),
        Invalid(text: "redis://%FF:hunter2@h", error: .userNotUTF8),
        Invalid(text: "redis://", error: .missingHost),
        Invalid(text: "redis://:hunter2@", error: .missingHost),
        Invalid(text: "redis://:hunter2@:6379", error: .missingHost),
        Invalid(text: "redis:///0", error: .missingHost),
        Invalid(text: "redis://bad_host", error: .badHost),
        Invalid(text: "redis://-h", error: .badHost),
        Invalid(text: "redis://[::1", error: .badHost),
        Invalid(text: "redis://[127.0.0.1]", error: .badHost),
        Invalid(text: "redis://[::1]x", error: .badHost),
        Invalid(text: "redis://h%41", error: .badHost),
        Invalid(text: "redis://fe80::1", error: .badPort),
        Invalid(text: "redis://h:0", error: .badPort),
        Invalid(text: "redis://h:65536", error: .badPort),
        Invalid(text: "redis://h:-1", error: .badPort),
        Invalid(text: "redis://h:+80", error: .badPort),
        Invalid(text: "redis://h:abc", error: .badPort),
        Invalid(text: "redis://h:", error: .badPort),
        Invalid(text: "redis://h:000006379", error: .badPort),
        Invalid(text: "redis://h:99999999999999999999", error: .badPort),
        Invalid(text: "redis://h/-1", error: .badDatabase),
        Invalid(text: "redis://h/+1", error: .badDatabase),
        Invalid(text: "redis://h/abc", error: .badDatabase),
        Invalid(text: "redis://h/1.0", error: .badDatabase),
        Invalid(text: "redis://h/1/2", error: .badDatabase),
        Invalid(text: "redis://h/2147483648", error: .badDatabase),
        Invalid(text: "redis://h/99999999999999999999", error: .badDatabase),
        Invalid(text: "redis://h/0?timeout=1", error: .queryNotAllowed),
        Invalid(text: "redis://h?db=1", error: .queryNotAllowed),
        Invalid(text: "unix://localhost/run/redis.sock", error: .unixWithHost),
        Invalid(text: "unix://:hunter2@h/run/redis.sock", error: .unixWithHost),
        Invalid(text: "unix://", error: .badSocketPath),
        Invalid(text: "unix:///", error: .badSocketPath),
        Invalid(text: "unix:///run/redis/", error: .badSocketPath),
        Invalid(text: "unix:///a%00b", error: .badSocketPath),
        Invalid(text: "unix:///a%zz", error: .badPercentEncoding(.path)),
        Invalid(text: "unix:///" + String(repeating: "s", count: 107), error: .socketPathTooLong(limit: 107)),
        Invalid(text: "unix:///r.sock?database=1", error: .badQueryParameter),
        Invalid(text: "unix:///r.sock?db=1&", error: .badQueryParameter),
        Invalid(text: "unix:///r.sock?db=1&db=2", error: .repeatedDatabase),
        Invalid(text: "unix:///r.sock?db=", error: .badDatabase),
        Invalid(text: "unix:///r.sock?db=-1", error: .badDatabase),
        Invalid(text: "unix:///r.sock?db=2147483648", error: .badDatabase),
    ]

    @Test("malformed and hostile URLs are refused with the reason, never showing the password", arguments: invalid)
    func refusesInvalid(_ example: Invalid) {
        #expect(throws: example.error) { try RedisURL(parsing: example.text) }
        let message = example.error.description
        #expect(message.hasPrefix("invalid Redis URL: "))
        #expect(!message.contains("\n"))
        for fragment in ["hunter2", "hun", "ter2"] {
            #expect(!message.contains(fragment), "\(message)")
        }
    }

    @Test("an unknown scheme is named only when it is a scheme at all")
    func schemeNamedOnlyWhenSyntactic() {
        #expect(throws: RedisURLError.unknownScheme("memcached")) { try RedisURL(parsing: "MemCached://h") }
        #expect(throws: RedisURLError.missingScheme) { try RedisURL(parsing: "hunter2!://h") }
        #expect(throws: RedisURLError.missingScheme) { try RedisURL(parsing: "\(String(repeating: "a", count: 17))://h") }
    }

    @Test("description shows the URL as it was understood, with the password hidden", arguments: [
        ("redis://relay:s3cr%40t@redis.internal:6380/3", "redis://relay:<hidden>@redis.internal:6380/3"),
        ("redis://:secret@localhost", "redis://:<hidden>@localhost:6379/0"),
        ("redis://localhost", "redis://localhost:6379/0"),
        ("redis://[::1]:7000", "redis://[::1]:7000/0"),
        ("redis://r%20elay:x@h", "redis://r%20elay:<hidden>@h:6379/0"),
        ("unix://:pw@/run/redis.sock?db=2", "unix://:<hidden>@/run/redis.sock?db=2"),
        ("unix:///tmp/a%20b.sock", "unix:///tmp/a%20b.sock"),
    ])
    func descriptionHidesPassword(_ text: String, _ expected: String) throws {
        let url = try RedisURL(parsing: text)
        #expect(url.description == expected)
        #expect(try RedisURL(parsing: expected.replacingOccurrences("<hidden>", with: "pw")).endpoint == url.endpoint)
    }

    @Test("printing, reflecting or dumping a URL never shows its password")
    func noPasswordAnywhere() throws {
        let url = try RedisURL(parsing: "redis://relay:hunter2@h:6379/1")
        var dumped = ""
        dump(url, to: &dumped)
        for text in [url.description, String(reflecting: url), "\(url)", dumped, String(describing: url.password)] {
            #expect(!text.contains("hunter2"), "\(text)")
        }
        #expect(url.password == RedisPassword("hunter2"))
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: String, with replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
