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
///
/// The fields are kept as bytes (names and values back to back in one array,
/// with one small array saying where each is) rather than as a String pair
/// per field: a sender's request carries a dozen fields of which the relay
/// reads a few, and most values are longer than a String holds inline (15
/// bytes), so Strings cost an allocation and a UTF-8 validation per field on
/// every request. `valueBytes(for:)` and `firstValueBytes(for:)` read without
/// copying; the String accessors decode (invalid UTF-8 repaired to U+FFFD)
/// when asked.
public struct HTTPHeaders: Sendable, Equatable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    /// Where one field's name and value are in `bytes`.
    struct Span: Sendable, Equatable {
        var nameStart: Int
        var nameEnd: Int
        var valueStart: Int
        var valueEnd: Int
    }

    private var bytes: [UInt8]
    private var spans: [Span]

    public init() {
        bytes = []
        spans = []
    }

    /// Builds headers from pairs; names are lowercased.
    public init(_ pairs: [(String, String)]) {
        self.init()
        spans.reserveCapacity(pairs.count)
        for (name, value) in pairs { append(name: name, value: value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Headers over a copy of `head` (the parser's field lines): `spans`
    /// index into it; names are lowercased in the copy.
    init(copying head: UnsafeRawBufferPointer, spans: [Span]) {
        var bytes = [UInt8](head)
        for span in spans {
            for index in span.nameStart..<span.nameEnd { bytes[index] = asciiLowercase(bytes[index]) }
        }
        self.bytes = bytes
        self.spans = spans
    }

    /// Appends a field; `name` is lowercased.
    public mutating func append(name: String, value: String) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name.utf8.lazy.map(asciiLowercase))
        let nameEnd = bytes.count
        bytes.append(contentsOf: value.utf8)
        spans.append(Span(nameStart: nameStart, nameEnd: nameEnd, valueStart: nameEnd, valueEnd: bytes.count))
    }

    /// Every field, as Strings (allocates; for tests and diagnostics).
    public var fields: [HTTPField] { Array(self) }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        firstValueBytes(for: name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        valueBytes(for: name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The bytes of the first value of `name`, or nil. No copy.
    public func firstValueBytes(for name: String) -> ArraySlice<UInt8>? {
        var iterator = valueBytes(for: name).makeIterator()
        return iterator.next()
    }

    /// The bytes of every value of `name`, in order, without copying them.
    public func valueBytes(for name: String) -> ValueBytes { ValueBytes(headers: self, name: name) }

    /// How many fields are called `name`.
    public func count(of name: String) -> Int {
        var name = name
        return name.withUTF8 { wanted in
            var count = 0
            for span in spans where nameMatches(span, wanted) { count += 1 }
            return count
        }
    }

    /// True when some value of `name`, read as a comma-separated list
    /// (RFC 9110 §5.6.1), contains `token`, compared case-insensitively.
    public func containsToken(_ token: String, in name: String) -> Bool {
        for value in valueBytes(for: name) {
            var found = false
            forEachListElement(of: value) { element in
                if !found && asciiCaseInsensitiveEquals(trimmingOWS(element), token.utf8) { found = true }
            }
            if found { return true }
        }
        return false
    }

    /// The values of one field name, in order: slices of the headers' bytes.
    public struct ValueBytes: Sequence {
        fileprivate let headers: HTTPHeaders
        fileprivate let name: String

        public struct Iterator: IteratorProtocol {
            fileprivate let headers: HTTPHeaders
            fileprivate var name: String
            fileprivate var position = 0

            public mutating func next() -> ArraySlice<UInt8>? {
                let headers = headers
                let spans = headers.spans
                let found: Int? = name.withUTF8 { wanted in
                    while position < spans.count {
                        let candidate = position
                        position += 1
                        if headers.nameMatches(spans[candidate], wanted) { return candidate }
                    }
                    return nil
                }
                guard let found else { return nil }
                return headers.bytes[spans[found].valueStart..<spans[found].valueEnd]
            }
        }

        public func makeIterator() -> Iterator { Iterator(headers: headers, name: name) }

        /// The first value, or nil when the field is absent.
        public var first: ArraySlice<UInt8>? {
            var iterator = makeIterator()
            return iterator.next()
        }

        public var isEmpty: Bool { first == nil }
    }

    /// Whether the (lowercased) name of `span` is `wanted`, compared
    /// case-insensitively.
    @inline(__always)
    private func nameMatches(_ span: Span, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        guard span.nameEnd - span.nameStart == wanted.count else { return false }
        var index = 0
        while index < wanted.count {
            if bytes[span.nameStart + index] != asciiLowercase(wanted[index]) { return false }
            index += 1
        }
        return true
    }

    /// Equal when the fields are, compared as Strings (as when fields were
    /// stored as Strings: canonically equivalent values are equal).
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.spans.count == rhs.spans.count else { return false }
        for index in lhs.spans.indices {
            let left = lhs.spans[index]
            let right = rhs.spans[index]
            if !lhs.bytes[left.nameStart..<left.nameEnd].elementsEqual(rhs.bytes[right.nameStart..<right.nameEnd]) {
                return false
            }
            if !sameFieldValue(lhs.bytes[left.valueStart..<left.valueEnd], rhs.bytes[right.valueStart..<right.valueEnd]) {
                return false
            }
        }
        return true
    }

    public var startIndex: Int { spans.startIndex }
    public var endIndex: Int { spans.endIndex }
    public subscript(position: Int) -> HTTPField {
        let span = spans[position]
        return HTTPField(name: String(decoding: bytes[span.nameStart..<span.nameEnd], as: UTF8.self),
                         value: String(decoding: bytes[span.valueStart..<span.valueEnd], as: UTF8.self))
    }
}

@inline(__always)
func isOWS(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

/// Calls `body` with each element of a comma-separated list (RFC 9110
/// §5.6.1), untrimmed, without collecting them into an array.
func forEachListElement(of value: ArraySlice<UInt8>, omittingEmpty: Bool = true,
                        _ body: (ArraySlice<UInt8>) -> Void) {
    var start = value.startIndex
    var index = start
    while index < value.endIndex {
        if value[index] == UInt8(ascii: ",") {
            if !omittingEmpty || index > start { body(value[start..<index]) }
            start = index + 1
        }
        index += 1
    }
    if !omittingEmpty || value.endIndex > start { body(value[start..<value.endIndex]) }
}

/// Whether two field values are the same text: byte-equal, or (only when
/// non-ASCII bytes are involved) equal as Strings, which is what comparing
/// String values did (invalid UTF-8 repaired, canonical equivalence).
func sameFieldValue(_ left: some Collection<UInt8>, _ right: some Collection<UInt8>) -> Bool {
    if left.elementsEqual(right) { return true }
    guard left.contains(where: { $0 >= 0x80 }) || right.contains(where: { $0 >= 0x80 }) else { return false }
    return String(decoding: left, as: UTF8.self) == String(decoding: right, as: UTF8.self)
}

/// Whether `bytes` and `expected` are equal ignoring ASCII case (tokens,
/// field names: RFC 9110 §5.1, §5.6.2).
func asciiCaseInsensitiveEquals(_ bytes: some Collection<UInt8>, _ expected: some Collection<UInt8>) -> Bool {
    guard bytes.count == expected.count else { return false }
    // Index loops rather than zip: zip's iterator was most of the cost.
    var index = bytes.startIndex
    var expectedIndex = expected.startIndex
    while index != bytes.endIndex {
        if asciiLowercase(bytes[index]) != asciiLowercase(expected[expectedIndex]) { return false }
        bytes.formIndex(after: &index)
        expected.formIndex(after: &expectedIndex)
    }
    return true
}

@inline(__always)
func asciiLowercase(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
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

/// Whether `byte` is a `tchar` of RFC 9110 §5.6.2, the bytes allowed in a
/// token (method, field name): `!#$%&'*+-.^_`|~`, digits and letters. Two
/// bit masks over ASCII rather than a global table, whose every access paid
/// a lazy-initialisation check (swift_once).
@inline(__always)
func isTokenByte(_ byte: UInt8) -> Bool {
    if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> UInt64(byte) & 1 != 0 }
    if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> UInt64(byte - 64) & 1 != 0 }
    return false
}
