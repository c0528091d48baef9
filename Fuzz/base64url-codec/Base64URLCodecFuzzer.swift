// Fuzz target: base64url / base64 decoding and encoding (Base64URL.swift).
//
// Input: [mode][…]; mode even: the rest is text to decode; mode odd: the rest
// is bytes to encode and decode back.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md); a plain `swift build`
// makes it a replay tool: `base64url-codec-fuzzer <input file>…` runs the checks.

import Base64URL
import FuzzSupport

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    runCodecTarget(data, size, decode: checkDecode, roundTrip: checkRoundTrip)
}

/// Any text: decoding either fails for the documented reason or yields bytes
/// that re-encode to the same digits (alphabet normalized to base64url, the
/// unused low bits of the last digit cleared).
private func checkDecode(_ text: [UInt8]) {
    let result = text.withUnsafeBytes { buffer in
        Result { () throws(Base64URLError) -> [UInt8] in try base64URLDecode(buffer) }
    }
    // The String entry point must agree whenever the text is UTF-8 as is.
    if let string = String(validating: text, as: UTF8.self) {
        let viaString = Result { () throws(Base64URLError) -> [UInt8] in try base64URLDecode(string) }
        require(viaString == result, "String and buffer decoding differ")
    }

    trace("decode \(describe(text)): \(result)")
    let padding = text.reversed().prefix { $0 == UInt8(ascii: "=") }.count
    let digitCount = text.count - padding
    switch result {
    case .failure(.invalidCharacter(let offset)):
        require(offset >= 0 && offset < digitCount && base64DigitValue(text[offset]) == 0xFF
                    && text[offset] != UInt8(ascii: "="),
                "invalidCharacter(\(offset)) for \(describe(text))")
        require(text[..<offset].allSatisfy { base64DigitValue($0) != 0xFF }, "an earlier byte is invalid")
    case .failure(.invalidLength):
        require(digitCount % 4 == 1, "invalidLength for \(digitCount) digits")
    case .failure(.invalidPadding):
        let badPadding = padding > 0 && (padding > 2 || text.count % 4 != 0)
        let innerPadding = text[..<digitCount].contains(UInt8(ascii: "="))
        require(badPadding || innerPadding, "invalidPadding for \(describe(text))")
    case .success(let decoded):
        require(digitCount % 4 != 1, "decoded a 4n+1-digit text")
        require(padding == 0 || (padding <= 2 && text.count % 4 == 0), "accepted malformed padding")
        require(decoded.count == digitCount * 6 / 8, "\(decoded.count) bytes from \(digitCount) digits")
        let reencoded = Array(base64URLEncode(decoded).utf8)
        require(reencoded.count == digitCount, "re-encoding has \(reencoded.count) digits, not \(digitCount)")
        let unusedBits = [0, 0, 4, 2][digitCount % 4]
        for index in 0..<digitCount {
            var original = base64DigitValue(text[index])
            if index == digitCount - 1 { original &= ~UInt8((1 << unusedBits) - 1) }
            require(base64DigitValue(reencoded[index]) == original,
                    "digit \(index) re-encodes differently: \(describe(text)) → \(describe(reencoded))")
        }
    }
}

/// Any bytes: the unpadded base64url encoding has the RFC 4648 length and
/// alphabet, and decodes back, as does its padded and standard-alphabet form.
private func checkRoundTrip(_ bytes: [UInt8]) {
    let encoded = base64URLEncode(bytes)
    let digits = Array(encoded.utf8)
    trace("encode \(bytes.count) bytes: \(encoded)")
    require(digits.count == (bytes.count * 4 + 2) / 3, "\(digits.count) digits for \(bytes.count) bytes")
    require(digits.allSatisfy { base64URLAlphabet.contains($0) }, "digit outside base64url: \(encoded)")
    require((try? base64URLDecode(encoded)) == bytes, "round trip failed for \(describe(bytes))")

    let padded = encoded + String(repeating: "=", count: (4 - digits.count % 4) % 4)
    require((try? base64URLDecode(padded)) == bytes, "padded round trip failed: \(padded)")
    let standard = String(decoding: digits.map {
        $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0
    }, as: UTF8.self)
    require((try? base64URLDecode(standard)) == bytes, "standard-alphabet round trip failed: \(standard)")
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (Fuzz/README.md)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBase64URL(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum Base64URLCodecReplay { static func main() { replayInputFiles(tool: "base64url-codec-fuzzer", fuzzOne) } }
#endif
