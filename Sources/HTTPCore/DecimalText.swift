// Integers as decimal digits without Foundation or String(format:): the
// hot path writes statuses, lengths, TTLs and latencies this way.

/// Appends the decimal digits of an integer, `-` first when negative (no
/// String(format:), no Foundation on the hot path).
public func appendDecimal(_ value: Int, to output: inout [UInt8]) {
    withDecimalDigits(value) { output.append(contentsOf: $0) }
}

/// The decimal digits of `value` (`-` first when negative), written right to
/// left on the stack and handed to `body`: no allocation.
func withDecimalDigits<Result>(_ value: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
    // Int.min: 19 digits and a sign.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
        var magnitude = value.magnitude
        var start = digits.count
        repeat {
            start -= 1
            digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        if value < 0 {
            start -= 1
            digits[start] = UInt8(ascii: "-")
        }
        return body(UnsafeBufferPointer(rebasing: digits[start...]))
    }
}

/// The decimal digits of `value`, as a String. Up to 15 characters (every
/// TTL, expiration, priority and status) it is a small string: no
/// allocation, unlike going through a [UInt8].
public func decimalText(_ value: Int) -> String {
    withDecimalDigits(value) { String(decoding: $0, as: UTF8.self) }
}
