/// A command to send, encoded once (RESP: an array of bulk strings,
/// binary-safe; hiredis' formatter, `Hiredis.swift`).
public struct RedisCommand: Sendable {
    /// The command's name (its first argument, upper-cased) for logs and
    /// errors; the other arguments may be secrets and are never shown.
    public let name: String
    /// The bytes on the wire.
    public let encoded: [UInt8]

    /// `arguments`: the name, then its arguments, each any bytes.
    public init(_ arguments: [[UInt8]]) {
        encoded = hiredisFormatCommand(arguments)
        let first = arguments[0]
        name = first.count <= 32 && first.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            ? String(decoding: first, as: UTF8.self).uppercased() : "?"
    }

    public init(_ arguments: String...) {
        self.init(arguments.map { Array($0.utf8) })
    }

    /// A name and arguments of text, then arguments of bytes (a value).
    public init(_ name: String, _ arguments: [String], _ values: [[UInt8]] = []) {
        self.init([Array(name.utf8)] + arguments.map { Array($0.utf8) } + values)
    }
}
