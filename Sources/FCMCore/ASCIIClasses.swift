// The ASCII classes the service account's fields and the token endpoint's
// answers are checked with. Three one-line tests, kept here rather than
// making FCM's words depend on HTTPCore, whose `isDigit` is the only one of
// them it has.

@inline(__always) func isLowercaseLetter(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
@inline(__always) func isLetter(_ byte: UInt8) -> Bool { isLowercaseLetter(byte | 0x20) }
@inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
