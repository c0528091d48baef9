/// A `Retry-After` value in seconds: delay-seconds (RFC 9110 §10.2.3,
/// `1*DIGIT`, optional whitespace around it), at most `maxSeconds`. An
/// HTTP-date, or anything else, is nil (the caller's own backoff decides).
/// The push services' answers (APNs, FCM) and a front before them read it so.
public func retryAfterDelaySeconds(_ value: Substring.UTF8View, atMost maxSeconds: Int) -> Int? {
    var digits = value.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
    while let last = digits.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
        digits = digits.dropLast()
    }
    guard !digits.isEmpty else { return nil }
    var seconds = 0
    for byte in digits {
        guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
        // Saturates instead of overflowing: a long run of digits is "a long time".
        seconds = min(seconds * 10 + Int(byte - UInt8(ascii: "0")), maxSeconds)
    }
    return seconds
}
