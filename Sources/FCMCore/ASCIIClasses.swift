// The ASCII classes the service account's fields and the token endpoint's
// answers are checked with. HTTP1's ASCII helpers are out of reach: HTTP1
// does I/O, and FCMCore is pure.

@inline(__always) func isLowercaseLetter(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
@inline(__always) func isLetter(_ byte: UInt8) -> Bool { isLowercaseLetter(byte | 0x20) }
@inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
