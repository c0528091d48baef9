// Fuzz target: extended Z85 (Z85.swift, WIRE.md §2.1).
//
// Input: [mode][…]; mode even: the rest is text to decode; mode odd: the rest
// is bytes to encode and decode back.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md); a plain `swift build`
// makes it a replay tool: `z85-codec-fuzzer <input file>…` runs the checks.

import FuzzSupport
import HTTPCore
import RelayCore

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    runCodecTarget(data, size, decode: checkDecode, roundTrip: checkRoundTrip)
}

/// Any text: extended Z85 is a bijection, so a text that decodes re-encodes
/// to itself; a text that does not decode fails at the documented place.
private func checkDecode(_ text: [UInt8]) {
    let result = text.withUnsafeBytes { buffer in
        Result { () throws(Z85Error) -> [UInt8] in try Z85.decode(buffer) }
    }
    if let string = String(validating: text, as: UTF8.self) {
        let viaString = Result { () throws(Z85Error) -> [UInt8] in try Z85.decode(string) }
        require(viaString == result, "String and buffer decoding differ")
    }
    trace("decode \(describe(text)): \(result)")
    let isDigit = { (byte: UInt8) in Z85.alphabet.contains(byte) }
    switch result {
    case .success(let decoded):
        require(Z85.encodedCount(decoded.count) == text.count, "\(decoded.count) bytes from \(text.count) digits")
        require(Array(Z85.encode(decoded).utf8) == text, "re-encoding differs: \(describe(text))")
    case .failure(.danglingDigit):
        require(text.count % 5 == 1, "danglingDigit for \(text.count) digits")
    case .failure(.invalidCharacter(let offset)):
        require(text.count % 5 != 1 && offset < text.count && !isDigit(text[offset]),
                "invalidCharacter(\(offset)) for \(describe(text))")
        require(text[..<offset].allSatisfy(isDigit), "an earlier byte is invalid")
    case .failure(.overflow(let offset)):
        require(text.count % 5 != 1 && offset % 5 == 0 && offset < text.count, "overflow(\(offset))")
        let group = text[offset..<min(offset + 5, text.count)]
        require(text[..<(offset + group.count)].allSatisfy(isDigit), "overflow in a group with a non-digit")
        let value = group.reduce(UInt64(0)) { $0 * 85 + UInt64(Z85.digitValues[Int($1)]) }
        require(value >> UInt64(8 * (group.count - 1)) != 0, "overflow(\(offset)) for a value that fits")
    }
}

/// Any bytes: the encoding has the documented length and alphabet, decodes
/// back, and the three encode entry points agree.
private func checkRoundTrip(_ bytes: [UInt8]) {
    let encoded = Z85.encode(bytes)
    let digits = Array(encoded.utf8)
    trace("encode \(describe(bytes)): \(encoded)")
    require(digits.count == Z85.encodedCount(bytes.count), "\(digits.count) digits for \(bytes.count) bytes")
    require(digits.allSatisfy { Z85.alphabet.contains($0) }, "digit outside the alphabet: \(encoded)")
    require((try? Z85.decode(encoded)) == bytes, "round trip failed for \(describe(bytes))")

    // Appending keeps what the output already holds.
    var output: [UInt8] = Array("prefix".utf8)
    Z85.encode(bytes[...], into: &output)
    require(output == Array("prefix".utf8) + digits, "encode(into:) differs")
    var lazyOutput: [UInt8] = []
    Z85.encode(bytes.lazy.map { $0 }, into: &lazyOutput)
    require(lazyOutput == digits, "encode of a non-contiguous collection differs")
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (Fuzz/README.md)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzZ85(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum Z85CodecReplay { static func main() { replayInputFiles(tool: "z85-codec-fuzzer", fuzzOne) } }
#endif
