// The `apns-id` the relay gives each notification (and sends back as
// `Location`, RFC 8030 §5).

/// A random (version 4, RFC 9562 §5.4) UUID in canonical 8-4-4-4-12 form,
/// uppercase as APNs writes its own ids.
///
/// Byte i of the UUID is byte i (least significant first) of the first
/// random word for i < 8, of the second for i ≥ 8. Written straight into the
/// String's storage: one allocation.
public func makeAPNsID(random: inout some RandomNumberGenerator) -> String {
    let words = (random.next() as UInt64, random.next() as UInt64)
    return String(unsafeUninitializedCapacity: 36) { text in
        var written = 0
        for index in 0..<16 {
            let word = index < 8 ? words.0 : words.1
            var byte = UInt8(truncatingIfNeeded: word >> UInt64(8 * (index % 8)))
            if index == 6 { byte = byte & 0x0F | 0x40 }  // version 4
            if index == 8 { byte = byte & 0x3F | 0x80 }  // variant 10xx
            if index == 4 || index == 6 || index == 8 || index == 10 {
                text[written] = UInt8(ascii: "-")
                written += 1
            }
            text[written] = uppercaseHexDigit(byte >> 4)
            text[written + 1] = uppercaseHexDigit(byte & 0x0F)
            written += 2
        }
        return written
    }
}

@inline(__always)
private func uppercaseHexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") - 10 + nibble
}
