import Testing
@testable import RelayCore

/// Who may use the provider API: a request's `Authorization`
/// against `API_KEYS` and the apps file's keys.
@Suite("API keys and a request's Authorization")
struct APIKeyringTests {
    static let everyAppKey = "every-app-0123456789"
    static let tootKey = "toot+only/0123456789=="
    static let bothKey = "toot-and-beta-0123456789"

    static func keyring() throws -> APIKeyring {
        try APIKeyring(APIKeyEntry.fromVariable([try APIKey(validating: everyAppKey)]) + [
            APIKeyEntry(name: "toot-backend", key: try APIKey(validating: tootKey), apps: .only(["toot"])),
            APIKeyEntry(name: "both", key: try APIKey(validating: bothKey), apps: .only(["toot", "default"])),
        ])
    }

    static func basic(_ text: String) -> String {
        "Basic " + base64Encode(Array(text.utf8))
    }

    /// Standard base64 with padding, as RFC 7617 §2 writes Basic's
    /// credentials (written out here, apart from the code under test).
    static func base64Encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var text = ""
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = chunk.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
            for digit in 0..<4 {
                text.append(digit <= chunk.count ? alphabet[(value >> (18 - 6 * digit)) & 63] : "=")
            }
            index += 3
        }
        return text
    }

    static let everyApp = APIAuthorization.key(name: "API_KEYS[1]", apps: .all)
    static let tootOnly = APIAuthorization.key(name: "toot-backend", apps: .only(["toot"]))

    /// An `Authorization` value (nil: none) and what it says.
    static let headerRows: [(String?, APIAuthorization)] = [
        (nil, .missing),
        ("", .missing),
        ("   ", .missing),
        ("Bearer \(tootKey)", tootOnly),
        ("Bearer \(everyAppKey)", everyApp),
        // RFC 7235 §2.1: the scheme in any case, one or more spaces after it.
        ("bearer \(tootKey)", tootOnly),
        ("BEARER \(tootKey)", tootOnly),
        ("Bearer  \(tootKey)", tootOnly),
        (" Bearer \(tootKey)\t", tootOnly),
        ("Bearer", .invalid),
        ("Bearer ", .invalid),
        ("Bearer\t\(tootKey)", .invalid),
        ("Bearer \(tootKey) extra", .invalid),
        ("Bearer \(tootKey)x", .invalid),
        ("Bearer \(tootKey.dropLast())", .invalid),
        ("Bearer " + tootKey.uppercased(), .invalid),
        ("Bearer " + String(repeating: "a", count: 10_000), .invalid),
        // Basic (RFC 7617): the key as the user, as the password, alone.
        (basic("\(tootKey):"), tootOnly),
        (basic("\(tootKey):anything"), tootOnly),
        (basic("gateway:\(tootKey)"), tootOnly),
        (basic(":\(tootKey)"), tootOnly),
        (basic(tootKey), tootOnly),
        (basic("\(tootKey):\(tootKey)"), tootOnly),
        ("basic " + String(basic("x:\(tootKey)").dropFirst(6)), tootOnly),
        ("BASIC  " + String(basic("x:\(tootKey)").dropFirst(6)), tootOnly),
        // Basic without padding or with the URL-safe alphabet is the same key.
        ("Basic " + base64Encode(Array("x:\(tootKey)".utf8)).replacingOccurrences(of: "=", with: ""), tootOnly),
        (basic("\(tootKey):\(everyAppKey)"), .invalid),
        (basic("gateway:wrong-password-0123456789"), .invalid),
        (basic("gateway:"), .invalid),
        ("Basic", .invalid),
        ("Basic !!!not-base64!!!", .invalid),
        ("Basic " + base64Encode(Array("x:\(tootKey)".utf8)) + "=", .invalid),
        ("Basic \(tootKey)", .invalid),
        // Other schemes, even carrying a key.
        ("Token \(tootKey)", .invalid),
        ("vapid t=\(tootKey), k=BAAA", .invalid),
        (tootKey, .invalid),
        ("Bearer:\(tootKey)", .invalid),
    ]

    @Test("each Authorization form says missing, invalid, or which key", arguments: headerRows)
    func authorize(header: String?, expected: APIAuthorization) throws {
        #expect(try Self.keyring().authorize(authorization: header) == expected)
    }

    /// An authorization, an app id, and whether it may send for it.
    static let allowRows: [(APIAuthorization, String, Bool)] = [
        (everyApp, "toot", true),
        (everyApp, "default", true),
        (everyApp, "provisioned-by-pyapns", true),
        (tootOnly, "toot", true),
        (tootOnly, "beta", false),
        (tootOnly, "default", false),
        (.key(name: "both", apps: .only(["toot", "default"])), "default", true),
        (.key(name: "both", apps: .only(["toot", "default"])), "provisioned-by-pyapns", false),
        (.missing, "toot", false),
        (.invalid, "toot", false),
    ]

    @Test("a key allows its apps only; * and API_KEYS allow every app, provisioned ones too", arguments: allowRows)
    func allows(authorization: APIAuthorization, app: String, expected: Bool) {
        #expect(authorization.allows(app: app) == expected)
    }

    @Test("API_KEYS' keys are named API_KEYS[1], API_KEYS[2]… and allow every app")
    func variableNames() throws {
        let entries = APIKeyEntry.fromVariable([try APIKey(validating: Self.everyAppKey), try APIKey(validating: Self.tootKey)])
        #expect(entries.map(\.name) == ["API_KEYS[1]", "API_KEYS[2]"])
        #expect(entries.allSatisfy { $0.apps == .all })
    }

    @Test("one key in two entries, or one name twice, is refused naming the entries and not the key")
    func duplicates() throws {
        let key = try APIKey(validating: Self.tootKey)
        #expect(throws: APIKeyringError(message: "API keys \"API_KEYS[1]\" and \"toot-backend\" are the same key; give each its own")) {
            try APIKeyring(APIKeyEntry.fromVariable([key]) + [APIKeyEntry(name: "toot-backend", key: key, apps: .all)])
        }
        #expect(throws: APIKeyringError(message: "two API keys are named \"ops\"; give each its own name")) {
            try APIKeyring([APIKeyEntry(name: "ops", key: key, apps: .all),
                            APIKeyEntry(name: "ops", key: try APIKey(validating: Self.bothKey), apps: .all)])
        }
    }

    @Test("an empty keyring is empty and finds no key")
    func empty() {
        #expect(APIKeyring.empty.isEmpty)
        #expect(APIKeyring.empty.authorize(authorization: "Bearer \(Self.tootKey)") == .invalid)
        #expect(APIKeyring.empty.authorize(authorization: nil) == .missing)
    }

    @Test("a keyring printed, debug-printed or dumped shows names, never a key")
    func printingHidesKeys() throws {
        let keyring = try Self.keyring()
        var dumped = ""
        dump(keyring, to: &dumped)
        for text in [String(describing: keyring), String(reflecting: keyring), dumped] {
            #expect(text.contains("toot-backend"), "\(text)")
            for key in [Self.everyAppKey, Self.tootKey, Self.bothKey] {
                #expect(!text.contains(key.prefix(12)), "\(text)")
            }
        }
    }

    /// A key as trimmed text, the problem (nil: a key).
    static let keyRows: [(String, String?)] = [
        ("0123456789abcdef", nil),
        ("  0123456789abcdef\r\n", nil),
        ("A-Z.a_z~0+9/0123==", nil),
        ("", "is empty"),
        (" \t ", "is empty"),
        ("0123456789abcde", "is 15 bytes long; at least 16, so that it cannot be guessed (use 32 random bytes in base64, e.g. openssl rand -base64 32)"),
        ("0123456789abcdef,", "may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        ("0123456789:abcdef", "may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
        ("=0123456789abcdef", "may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"),
    ]

    @Test("a key is 16 to 512 bytes of RFC 6750's b64token, white space around it trimmed", arguments: keyRows)
    func keySyntax(text: String, problem: String?) {
        do {
            let key = try APIKey(validating: text)
            #expect(problem == nil, "accepted")
            #expect(key.bytes == Array(text.utf8).filter { $0 > 0x20 })
        } catch {
            #expect(error.message == problem)
        }
    }
}
