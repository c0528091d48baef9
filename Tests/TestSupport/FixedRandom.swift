/// Returns the given values in turn, the first again after the last: a
/// random number generator whose draws a test knows exactly (a backoff's
/// jitter, an APNs id's words). 0 draws the lowest jitter, 1 << 63 half of
/// the random part, `.max` all of it.
public struct FixedRandom: RandomNumberGenerator {
    public var values: [UInt64]
    public var index = 0

    public init(values: [UInt64]) {
        precondition(!values.isEmpty, "a generator needs a value to return")
        self.values = values
    }

    public mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[index % values.count]
    }
}
