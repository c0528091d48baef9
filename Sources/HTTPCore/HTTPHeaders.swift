/// HTTP protocol versions the relay speaks with senders.
public enum HTTPVersion: Sendable, Equatable {
    case http1_0
    case http1_1
}

/// One header field, the one type for a field in either HTTP version: the
/// name lowercased (field names are case-insensitive, RFC 9110 §5.1; HTTP/2
/// requires them lowercase, RFC 9113 §8.2.1), the value as received without
/// surrounding whitespace.
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String
    /// HPACK "never indexed" (RFC 7541 §6.2.3), read by HTTP/2 only: set it
    /// for a value unique to one request (an id), which indexing would only
    /// push through both peers' dynamic tables, evicting the fields that do
    /// repeat. A stored Bool, not a side table or a wrapper type: every APNs
    /// request stores its fields in one `[HTTPField]`, and a Bool after the
    /// two Strings grows a field's stride from 32 to 40 bytes in that same
    /// allocation, with no other allocation, copy or indirection per field.
    public var neverIndexed: Bool

    public init(name: String, value: String, neverIndexed: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndexed = neverIndexed
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

    /// Equal when the fields are, compared as Strings (canonically
    /// equivalent values are equal).
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
