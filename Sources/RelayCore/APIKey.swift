// A key of the provider API (WIRE.md §4.1, "Keys"): the one
// syntax check shared by `API_KEYS` (Configuration) and the apps file's
// `[[api-key]]` entries, and a holder that never shows the key.

/// A provider API key. Its `description`, `debugDescription` and mirror
/// hide it, so a configuration, an app list or a keyring printed, dumped
/// or interpolated never shows a key: a key is never logged.
public struct APIKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key's bytes, trimmed, checked by `apiKeyProblem`.
    public let bytes: [UInt8]

    /// Keys shorter than this are refused: a key is all that stands between
    /// the internet and sending notifications to every device of the apps
    /// it names, and 16 random bytes (128 bits; 22 base64 digits carry a
    /// little more) are past any online guessing.
    public static let minimumBytes = 16
    /// Longer keys are refused: a request's key is compared with every key
    /// (`APIKeyring.authorize`), so this bounds that work; a 64-byte random
    /// key in base64 is 88 bytes.
    public static let maximumBytes = 512

    /// `text` with the white space around it trimmed (a key pasted with a
    /// newline, or written `a, b` in `API_KEYS`); throws the problem when it
    /// is not a key (`apiKeyProblem`).
    public init(validating text: some StringProtocol) throws(APIKeyProblem) {
        let trimmed = Array(text.utf8.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
        if let problem = apiKeyProblem(trimmed) { throw APIKeyProblem(message: problem) }
        bytes = trimmed
    }

    public var description: String { "<API key, \(bytes.count) bytes, hidden>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// Why a text is not an API key. The message never quotes the key.
public struct APIKeyProblem: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The problem with `key` (already trimmed) as an API key, nil when there
/// is none. A key is 16 to 512 characters of RFC 6750 §2.1's `b64token`
/// (letters, digits, `-._~+/`, then `=` padding only at the end): what
/// `Authorization: Bearer <key>` can carry as it is, without a `:`, so it
/// also works as the user of HTTP Basic (RFC 7617 §2: the user-id holds no
/// colon), and without a `,`, which separates `API_KEYS`' items.
public func apiKeyProblem(_ key: [UInt8]) -> String? {
    if key.isEmpty { return "is empty" }
    if key.count < APIKey.minimumBytes {
        return "is \(key.count) bytes long; at least \(APIKey.minimumBytes), so that it cannot be guessed (use 32 random bytes in base64, e.g. openssl rand -base64 32)"
    }
    if key.count > APIKey.maximumBytes {
        return "is \(key.count) bytes long; at most \(APIKey.maximumBytes)"
    }
    let digits = key.prefix { isB64TokenDigit($0) }
    guard !digits.isEmpty, key[digits.count...].allSatisfy({ $0 == UInt8(ascii: "=") }) else {
        return "may hold only letters, digits and - . _ ~ + / (then = at the end): what an Authorization: Bearer header carries (RFC 6750 §2.1)"
    }
    return nil
}

/// RFC 6750 §2.1 `b64token` without its trailing `=`: ALPHA / DIGIT /
/// "-" / "." / "_" / "~" / "+" / "/".
private func isB64TokenDigit(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
         UInt8(ascii: "0")...UInt8(ascii: "9"):
        true
    case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"),
         UInt8(ascii: "/"):
        true
    default:
        false
    }
}

/// Space, tab, CR, LF: the white space trimmed around a key.
private func isSpace(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
}
