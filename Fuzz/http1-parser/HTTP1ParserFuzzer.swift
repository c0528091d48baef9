// Fuzz target: the incremental HTTP/1 request parser over whole byte streams.
//
// Input: [flags][3 limit bytes][k][k × uint16 split points][stream…]
// - flags bit 0: use the limits from the next three bytes instead of the
//   defaults (small limits make every limit branch reachable);
//   bit 1: feed the stream one byte at a time instead of at the split points.
// - the stream is parsed as a connection would: pipelined requests until the
//   buffer is exhausted or a request is refused.
//
// Property: feeding the stream in pieces (the parser's `.incomplete`
// contract: same bytes again, more appended) yields exactly the same results
// as feeding it whole. Plus per-request invariants (limits respected, framing
// consistent, consumed within the buffer).
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md); a plain `swift build`
// makes it a replay tool: `http1-parser-fuzzer <input file>…` runs the checks.

import FuzzSupport
import HTTPCore

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    let limitBytes = (Int(input.byte()), Int(input.byte()), Int(input.byte()))
    let limits = flags & 1 == 1
        ? HTTP1Limits(maxHeaderBytes: 1 + limitBytes.0 * limitBytes.0 / 4,
                      maxBodyBytes: limitBytes.1 * limitBytes.1 / 8,
                      maxHeaderCount: limitBytes.2 % 128)
        : HTTP1Limits()
    let splitCount = Int(input.byte() % 32)
    let rawSplits = (0..<splitCount).map { _ in input.uint16() }
    let stream = input.rest()

    var cuts: [Int]
    if flags & 2 == 2 {
        cuts = stream.isEmpty ? [] : Array(1..<stream.count)
    } else {
        cuts = Set(rawSplits.map { $0 % (stream.count + 1) }).filter { $0 > 0 && $0 < stream.count }.sorted()
    }
    cuts.append(stream.count)

    stream.withUnsafeBytes { all in
        let whole = parseWhole(all, limits: limits)
        let pieces = parseInPieces(all, cuts: cuts, limits: limits)
        require(whole == pieces, """
            split feeding differs from whole feeding at cuts \(cuts.dropLast().prefix(32)):
            whole:  \(whole.map(summary))
            pieces: \(pieces.map(summary))
            """)
        trace("\(cuts.count) pieces, limits \(limits): \(whole.map(summary))")
    }
    return 0
}

/// Feeds everything at once; after each complete request, the rest.
private func parseWhole(_ all: UnsafeRawBufferPointer, limits: HTTP1Limits) -> [HTTP1ParseResult] {
    var parser = HTTP1RequestParser(limits: limits)
    var results: [HTTP1ParseResult] = []
    var offset = 0
    // Each complete request consumes at least one byte: bounded by count + 1.
    for _ in 0...all.count {
        let remaining = UnsafeRawBufferPointer(rebasing: all[offset...])
        let result = parser.parse(remaining)
        results.append(result)
        checkResult(result, remaining: remaining, limits: limits)
        guard case .complete(_, let consumed) = result else { return results }
        offset += consumed
    }
    require(false, "parser returned more complete requests than the stream has bytes")
    return results
}

/// Feeds the stream as it would arrive in pieces ending at `cuts` (ascending,
/// the last one is the stream's end): after each arrival, parse until the
/// parser needs more bytes; stop at the first refused request.
private func parseInPieces(_ all: UnsafeRawBufferPointer, cuts: [Int], limits: HTTP1Limits) -> [HTTP1ParseResult] {
    var parser = HTTP1RequestParser(limits: limits)
    var results: [HTTP1ParseResult] = []
    var offset = 0
    var lastIncomplete = HTTP1ParseResult.incomplete(headComplete: false, expectsContinue: false)
    for end in cuts {
        var parsedSomething = false
        for _ in 0...(end - offset) {
            let available = UnsafeRawBufferPointer(rebasing: all[offset..<end])
            let result = parser.parse(available)
            checkResult(result, remaining: available, limits: limits)
            switch result {
            case .complete(_, let consumed):
                results.append(result)
                offset += consumed
                continue
            case .invalid:
                results.append(result)
                return results
            case .incomplete:
                lastIncomplete = result
                parsedSomething = true
            }
            break
        }
        require(parsedSomething, "parser returned more complete requests than the stream has bytes")
    }
    results.append(lastIncomplete)
    return results
}

/// Invariants of one result, whatever the feeding.
private func checkResult(_ result: HTTP1ParseResult, remaining: UnsafeRawBufferPointer, limits: HTTP1Limits) {
    switch result {
    case .incomplete(let headComplete, let expectsContinue):
        require(headComplete || !expectsContinue, "100-continue expected before the head is complete")
    case .invalid(let error):
        require([400, 413, 414, 431, 501, 505].contains(error.status), "unexpected status \(error.status)")
        require(!error.reason.isEmpty && !error.reason.utf8.contains(UInt8(ascii: "\n")),
                "reason is not one line: \(error.reason)")
    case .complete(let request, let consumed):
        require(consumed > 0 && consumed <= remaining.count,
                "consumed \(consumed) of a \(remaining.count)-byte buffer")
        require(request.body.count <= limits.maxBodyBytes,
                "body of \(request.body.count) bytes over the \(limits.maxBodyBytes)-byte cap")
        require(request.body.count < consumed, "body longer than the bytes consumed")
        require(request.headers.count <= limits.maxHeaderCount,
                "\(request.headers.count) header fields over the cap of \(limits.maxHeaderCount)")
        require(!request.method.isEmpty && request.method.utf8.allSatisfy { isTokenByte($0) },
                "method is not a token: \(describe(request.method.utf8))")
        require(!request.target.isEmpty, "empty request target")
        for field in request.headers {
            require(!field.name.isEmpty && field.name.utf8.allSatisfy { isTokenByte($0) && !isUpper($0) },
                    "header name is not a lowercase token: \(describe(field.name.utf8))")
            require(!field.value.utf8.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D },
                    "CR, LF or NUL in a header value: \(describe(field.value.utf8))")
            require(!isOWS(field.value.utf8.first) && !isOWS(field.value.utf8.last),
                    "header value not trimmed: \(describe(field.value.utf8))")
        }
        if request.version == .http1_1 {
            require(request.headers.count(of: "host") == 1, "HTTP/1.1 request without exactly one Host")
        }
        let chunked = !request.headers.values(for: "transfer-encoding").isEmpty
        if chunked {
            require(request.version == .http1_1, "chunked body in an HTTP/1.0 request")
            require(request.headers.values(for: "content-length").isEmpty, "both Transfer-Encoding and Content-Length")
        } else if let length = request.headers["content-length"] {
            let first = length.utf8.prefix { $0 != UInt8(ascii: ",") }
            let digits = trimmingOWS(Array(first))
            var value = 0
            for digit in digits { value = value * 10 + Int(digit - UInt8(ascii: "0")) }
            require(request.body.count == value, "body of \(request.body.count) bytes, Content-Length \(length)")
            // A fixed-length body is the last `value` bytes consumed, untouched.
            let bodyBytes = remaining[(consumed - value)..<consumed]
            require(request.body.elementsEqual(bodyBytes), "body differs from the bytes on the wire")
        } else {
            require(request.body.isEmpty, "body without framing headers")
        }
    }
}

private func isOWS(_ byte: UInt8?) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

private func isUpper(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }

/// A short description of a result for the mismatch report.
private func summary(_ result: HTTP1ParseResult) -> String {
    switch result {
    case .complete(let request, let consumed):
        "complete(\(request.method) \(describe(request.target.utf8, limit: 40)), \(request.headers.count) fields, "
            + "\(request.body.count)-byte body, keepAlive \(request.keepAlive), consumed \(consumed))"
    case .incomplete(let headComplete, let expectsContinue):
        "incomplete(headComplete: \(headComplete), expectsContinue: \(expectsContinue))"
    case .invalid(let error): "invalid(\(error.status) \(error.reason))"
    }
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (Fuzz/README.md)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1Parser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum HTTP1ParserReplay { static func main() { replayInputFiles(tool: "http1-parser-fuzzer", fuzzOne) } }
#endif
