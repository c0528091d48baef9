// An FCM registration token as a Web Push URL carries it. FCM documents
// no syntax; the tokens its SDKs hand out are about 160 characters of
// base64url digits with a `:` after the instance id (`cXyz…:APA91b…`).
// The relay takes 1 to 4096 of letters, digits, `-`, `_` and `:` and
// answers 400 to anything else before FCM is asked: such a token is never
// FCM's, and it goes into a JSON string and a log line as it is.

/// A registration token whose syntax the relay accepts.
public struct FCMToken: Sendable, Hashable {
    public let text: String

    public static let maxLength = 4_096

    public init?(_ text: some StringProtocol) {
        guard Self.isValid(text.utf8) else { return nil }
        self.text = String(text)
    }

    /// 1 to `maxLength` bytes, each a letter, digit, `-`, `_` or `:`.
    @inlinable
    public static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
        // A native string's UTF-8 read through its buffer: a quarter of the
        // instructions of stepping String.UTF8View's index per byte
        // (callgrind, a 163-byte token).
        if let valid = bytes.withContiguousStorageIfAvailable({ $0.allSatisfy(isTokenByte) }) { return valid }
        return bytes.allSatisfy(isTokenByte)
    }

    @inlinable
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"): true
        default: false
        }
    }
}
