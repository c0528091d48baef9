/// HTTP protocol versions the relay speaks with senders.
public enum HTTPVersion: Sendable, Equatable {
    case http1_0
    case http1_1
}

/// One header field: the name lowercased (field names are case-insensitive,
/// RFC 9110 §5.1), the value as received without surrounding whitespace.
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Header fields in the order received. Names are stored lowercased; lookups
/// are case-insensitive.
public struct HTTPHeaders: Sendable, Equatable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [HTTPField]

    public init() { fields = [] }

    /// Builds headers from pairs; names are lowercased.
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { HTTPField(name: asciiLowercased($0.0), value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Appends a field; `name` is lowercased.
    public mutating func append(name: String, value: String) {
        fields.append(HTTPField(name: asciiLowercased(name), value: value))
    }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        let wanted = asciiLowercased(name)
        return fields.first { $0.name == wanted }?.value
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        let wanted = asciiLowercased(name)
        return fields.compactMap { $0.name == wanted ? $0.value : nil }
    }

    /// How many fields are called `name`.
    public func count(of name: String) -> Int {
        let wanted = asciiLowercased(name)
        return fields.reduce(0) { $0 + ($1.name == wanted ? 1 : 0) }
    }

    /// True when some value of `name`, read as a comma-separated list
    /// (RFC 9110 §5.6.1), contains `token`, compared case-insensitively.
    public func containsToken(_ token: String, in name: String) -> Bool {
        let wanted = asciiLowercased(token)
        for value in values(for: name) {
            for element in value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true)
            where asciiLowercased(trimmingOWS(element)) == wanted {
                return true
            }
        }
        return false
    }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> HTTPField { fields[position] }
}

/// Lowercases ASCII letters only: header names and tokens are ASCII, and
/// Unicode case mapping would be both slower and wrong for them.
func asciiLowercased(_ text: some StringProtocol) -> String {
    if !text.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) { return String(text) }
    return String(decoding: text.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 },
                  as: UTF8.self)
}

/// Lowercased string of the given ASCII bytes (written straight into the
/// String's storage: no intermediate array per header name).
func asciiLowercased(_ bytes: some Collection<UInt8>) -> String {
    guard bytes.allSatisfy({ $0 < 0x80 }) else {
        // Not ASCII: decoding repairs invalid UTF-8, as before.
        return String(decoding: bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 },
                      as: UTF8.self)
    }
    return String(unsafeUninitializedCapacity: bytes.count) { buffer in
        var count = 0
        for byte in bytes {
            buffer[count] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            count += 1
        }
        return count
    }
}

/// The bytes without leading and trailing optional whitespace (SP, HTAB;
/// RFC 9110 §5.6.3).
func trimmingOWS<C: BidirectionalCollection>(_ bytes: C) -> C.SubSequence where C.Element == UInt8 {
    var start = bytes.startIndex
    var end = bytes.endIndex
    while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") {
        start = bytes.index(after: start)
    }
    while end > start {
        let last = bytes.index(before: end)
        guard bytes[last] == UInt8(ascii: " ") || bytes[last] == UInt8(ascii: "\t") else { break }
        end = last
    }
    return bytes[start..<end]
}

/// `tchar` of RFC 9110 §5.6.2: the bytes allowed in a token (method, field name).
let isTokenByte: [Bool] = {
    var table = [Bool](repeating: false, count: 256)
    for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
    for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
    for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
    for byte in "!#$%&'*+-.^_`|~".utf8 { table[Int(byte)] = true }
    return table
}()
