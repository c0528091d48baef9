// A device token from text outside a URL (the provider API: pyapns'
// notify, gorush's tokens), held to the same rule as the relay's URLs
// (WIRE.md §1.1): `normalizedDeviceToken` in Routing.swift.

/// `text` lowercased when it is an APNs device token (an even number of
/// 64 to 200 hex digits), else nil.
public func deviceToken(fromHex text: String) -> String? {
    // Over the contiguous UTF-8 bytes: through String.UTF8View's indices the
    // check cost 7,200 instructions per token, this 2,400 (callgrind,
    // BENCHMARKS.md).
    var text = text
    return text.withUTF8 { normalizedDeviceToken($0) }
}
