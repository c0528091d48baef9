// Shared by every fuzz target: the module FuzzSupport, which each fuzzer
// executable depends on (Package.swift), hence `public`.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// With FUZZ_TRACE set, targets print what each input exercised (to check
/// that the seeds reach the paths they are meant for):
/// `FUZZ_TRACE=1 .build-fuzz/bin/web-push Fuzz/corpus/web-push/*`.
public let fuzzTraceEnabled: Bool = getenv("FUZZ_TRACE") != nil

@inline(__always)
public func trace(_ message: @autoclosure () -> String) {
    if fuzzTraceEnabled { print("trace: \(message())") }
}

/// Whether `text`'s UTF-8 contains `part`'s, byte for byte. Not
/// `String.contains`, which compares grapheme clusters: a `/` followed by a
/// combining mark (U+0359 after `/push/`, found by the fuzzer) is one
/// cluster, so "/push/" would not be "contained" though the router, which
/// reads bytes, rightly saw it.
public func containsBytes(_ text: String, _ part: String) -> Bool {
    let haystack = Array(text.utf8), needle = Array(part.utf8)
    guard !needle.isEmpty else { return true }
    guard haystack.count >= needle.count else { return false }
    for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
        return true
    }
    return false
}

/// Reads structured choices from the front of a fuzz input. When the input
/// runs out every read returns zero/empty, so any byte string is a valid
/// input and the fuzzer can shrink it freely.
public struct FuzzInput {
    private let bytes: UnsafeRawBufferPointer
    public private(set) var offset = 0

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    }

    public var remainingCount: Int { bytes.count - offset }

    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A little-endian 16-bit value.
    public mutating func uint16() -> Int { Int(byte()) | Int(byte()) << 8 }

    /// A little-endian 64-bit value.
    public mutating func int64() -> Int {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(byte()) << UInt64(shift) }
        return Int(truncatingIfNeeded: value)
    }

    /// Up to `count` bytes (fewer when the input ends first).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        let taken = max(0, min(count, remainingCount))
        defer { offset += taken }
        return Array(bytes[offset..<(offset + taken)])
    }

    /// A 16-bit little-endian length, then that many bytes (at most `limit`).
    public mutating func lengthPrefixed(limit: Int = 4096) -> [UInt8] {
        bytes(min(uint16(), limit))
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] { bytes(remainingCount) }

    /// The unread bytes, without consuming them.
    public var unread: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[offset...]) }
}

/// Traps with `message` when an invariant does not hold. A real check in
/// every build mode (unlike `assert`), so the fuzzer sees the violation.
@inline(__always)
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
             file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("invariant violated: \(message())", file: file, line: line) }
}

/// A printable, bounded rendering of bytes for invariant messages.
public func describe(_ bytes: some Collection<UInt8>, limit: Int = 120) -> String {
    var text = ""
    for byte in bytes.prefix(limit) {
        if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") {
            text.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
            let hex = Array("0123456789abcdef".unicodeScalars)
            text += "\\x"
            text.unicodeScalars.append(hex[Int(byte >> 4)])
            text.unicodeScalars.append(hex[Int(byte & 0x0F)])
        }
    }
    if bytes.count > limit { text += "…(\(bytes.count) bytes)" }
    return text
}

/// The entry of a codec target. Input: [mode][…]; mode even: the rest is
/// text to decode; mode odd: the rest is bytes to encode and decode back.
public func runCodecTarget(_ data: UnsafePointer<UInt8>?, _ size: Int, decode: ([UInt8]) -> Void,
                    roundTrip: ([UInt8]) -> Void) -> CInt {
    var input = FuzzInput(data, size)
    if input.byte() % 2 == 0 {
        decode(input.rest())
    } else {
        roundTrip(input.rest())
    }
    return 0
}

/// The replay tool a SwiftPM fuzzer becomes in a plain build (Fuzz/README.md):
/// runs `fuzzOne` on each file named on the command line, as libFuzzer would,
/// and says so for each; exit 2 for a file it cannot read.
public func replayInputFiles(tool: String, _ fuzzOne: (UnsafePointer<UInt8>?, Int) -> CInt) {
    for path in CommandLine.arguments.dropFirst() {
        guard let handle = fopen(path, "rb") else {
            print("\(tool): cannot open \(path)")
            exit(2)
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, handle)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        fclose(handle)
        _ = bytes.withUnsafeBufferPointer { fuzzOne($0.baseAddress, $0.count) }
        print("\(tool): \(path): checks held")
    }
}

/// The content of a quoted string holding `text`, for a TOML basic string
/// (TOML 1.0 §String) or a JSON string (RFC 8259 §7) alike: both escape `"`
/// and `\` with a backslash and take `\u` and four hex digits for the
/// rest of the control characters.
public func quotedContent(_ text: String) -> String {
    var result = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\u{0}"..."\u{1F}", "\u{7F}":
            let hex = String(scalar.value, radix: 16)
            result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result
}

/// The base64url digits (RFC 4648 §5), for the targets that build or check
/// base64url text.
public let base64URLAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
