/// A received header list (pseudo-header fields excluded), in arrival
/// order, read in place from the session's buffer: no String is built for a
/// field nobody asks about.
///
/// Valid for the duration of the delegate call that hands it out; keeping it
/// longer is safe but costs the session a copy of its buffer.
public struct HTTP2HeaderFields: RandomAccessCollection, Sendable {
    let block: HeaderBlock

    init(_ block: HeaderBlock) {
        self.block = block
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { block.fields.count }

    /// The field at `position` (name lowercase, as HTTP/2 requires).
    public subscript(position: Int) -> (name: String, value: String) {
        (block.name(at: position), block.value(at: position))
    }

    /// The value of the last field named `name` (lowercase), or nil.
    public func value(for name: String) -> String? {
        lastIndex(named: name).map { block.value(at: $0) }
    }

    /// Whether the last field named `name` has exactly `value`, compared
    /// byte for byte without building a String.
    public func value(for name: String, equals value: String) -> Bool {
        guard let index = lastIndex(named: name) else { return false }
        return block.valueEquals(value, at: index)
    }

    private func lastIndex(named name: String) -> Int? {
        var index = block.fields.count - 1
        while index >= 0 {
            if block.nameEquals(name, at: index) { return index }
            index -= 1
        }
        return nil
    }
}
