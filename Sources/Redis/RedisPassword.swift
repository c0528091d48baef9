/// A Redis password (`requirepass`, or an ACL user's). Its `description`,
/// `debugDescription` and mirror hide it, so a URL printed, dumped or
/// interpolated never shows the password: it is never logged. Bytes, not
/// text: `AUTH` is binary-safe, and a percent-encoded password may decode
/// to any bytes.
public struct RedisPassword: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(_ text: String) {
        bytes = Array(text.utf8)
    }

    public var description: String { "<hidden>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
