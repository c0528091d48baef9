/// Why a request was refused: the status to answer with (then close) and a
/// one-line reason for the response body and the log.
public struct HTTP1ParseError: Error, Sendable, Equatable {
    public var status: Int
    public var reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }
}

public enum HTTP1ParseResult: Sendable, Equatable {
    /// A request, and how many bytes of the buffer it took (head, body and
    /// framing). Bytes after `consumed` belong to the next (pipelined) request.
    case complete(HTTP1Request, consumed: Int)
    /// More bytes are needed. `headComplete`: the head (request line and
    /// fields, up to its empty line) has been read and only the body is
    /// missing (the connection's body timer runs from then on).
    /// `expectsContinue` is true once the head is complete, carries
    /// `Expect: 100-continue` (HTTP/1.1 only, RFC 9110 §10.1.1) and the body
    /// has not fully arrived: the connection should send
    /// `HTTP/1.1 100 Continue` once (it stays true on later calls).
    case incomplete(headComplete: Bool, expectsContinue: Bool)
    /// The request is malformed or over a limit: answer `status`, then close.
    case invalid(HTTP1ParseError)
}

/// Incremental HTTP/1.1 request parser (RFC 9112) over a caller-owned buffer.
///
/// Contract: pass everything the connection holds that has not been consumed
/// yet, starting at the first byte of the current request. While the result is
/// `.incomplete`, pass the same bytes again with more appended; the parser
/// remembers how far it got, so a sender trickling one byte at a time costs
/// O(n) in total. After `.complete(_, consumed:)` the parser is back at its
/// initial state (reset is implicit): drop `consumed` bytes and call `parse`
/// with the rest for the next pipelined request. After `.invalid` the
/// connection must be closed; the parser is reset too. `reset()` is only
/// needed to abandon a partly parsed request. If the buffer passed is shorter
/// than what was already examined, the parser starts over (defensive; it is a
/// contract violation).
public struct HTTP1RequestParser: Sendable {
    public let limits: HTTP1Limits

    private enum Phase: Sendable {
        case requestLine
        case headerFields
        case fixedBody(length: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
    }

    private var phase = Phase.requestLine
    /// Offset of the first byte of the line being read.
    private var lineStart = 0
    /// Offset where the search for the line's LF resumes.
    private var scanOffset = 0
    private var method = ""
    private var target = ""
    private var version = HTTPVersion.http1_1
    /// Offset of the first header field line: `fieldSpans` count from it.
    private var fieldsStart = 0
    /// Where each field's name and value are while the head is read; the
    /// head's bytes are copied once, into `headers`, when it is complete.
    private var fieldSpans: [HTTPHeaders.Span] = []
    private var headers = HTTPHeaders()
    private var keepAlive = true
    private var expectsContinue = false
    /// Offset of the first body byte (the head's length).
    private var bodyStart = 0
    /// Decoded chunked body so far.
    private var body: [UInt8] = []

    /// Longest chunk-size line accepted (size plus ignored extensions).
    private static let maxChunkLineBytes = 1024

    public init(limits: HTTP1Limits = HTTP1Limits()) {
        self.limits = limits
    }

    /// Forgets any partly parsed request.
    public mutating func reset() {
        self = HTTP1RequestParser(limits: limits)
    }

    public mutating func parse(_ buffer: UnsafeRawBufferPointer) -> HTTP1ParseResult {
        if buffer.count < scanOffset { reset() }
        let result = step(buffer)
        switch result {
        case .incomplete: break
        case .complete, .invalid: reset()
        }
        return result
    }

    private mutating func step(_ buffer: UnsafeRawBufferPointer) -> HTTP1ParseResult {
        while true {
            switch phase {
            case .fixedBody(let length):
                guard buffer.count - bodyStart >= length else { return incomplete }
                let end = bodyStart + length
                return .complete(makeRequest(body: Array(UnsafeRawBufferPointer(rebasing: buffer[bodyStart..<end]))),
                                 consumed: end)

            case .chunkData(let remaining):
                let available = min(remaining, buffer.count - scanOffset)
                body.append(contentsOf: buffer[scanOffset..<(scanOffset + available)])
                scanOffset += available
                lineStart = scanOffset
                if available < remaining {
                    phase = .chunkData(remaining: remaining - available)
                    return incomplete
                }
                phase = .chunkDataEnd

            case .requestLine, .headerFields, .chunkSize, .chunkDataEnd, .trailers:
                guard let newline = firstNewline(in: buffer, from: scanOffset) else {
                    scanOffset = buffer.count
                    if let error = lineTooLong(unterminatedUpTo: buffer.count) { return .invalid(error) }
                    return incomplete
                }
                scanOffset = newline + 1
                if let error = lineTooLong(endingAt: newline + 1) { return .invalid(error) }
                // RFC 9112 §2.2: a recipient MAY accept a bare LF as a line
                // terminator and ignore a preceding CR.
                var lineEnd = newline
                if lineEnd > lineStart && buffer[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
                let line = UnsafeRawBufferPointer(rebasing: buffer[lineStart..<lineEnd])
                let offset = lineStart
                lineStart = newline + 1
                if let outcome = handleLine(line, at: offset, lineEnd: newline + 1, in: buffer) { return outcome }
            }
        }
    }

    /// The answer while more bytes are needed: how far the request got.
    private var incomplete: HTTP1ParseResult {
        switch phase {
        case .requestLine, .headerFields:
            .incomplete(headComplete: false, expectsContinue: false)
        case .fixedBody, .chunkSize, .chunkData, .chunkDataEnd, .trailers:
            .incomplete(headComplete: true, expectsContinue: expectsContinue)
        }
    }

    private func firstNewline(in buffer: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start
        let count = buffer.count
        // Eight bytes at a time (SWAR; a byte loop would be most of the head's
        // parsing): XOR with LF makes a newline byte zero, and
        // (w - 0x01…) & ~w & 0x80… flags zero bytes, the lowest flag exactly.
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let newlines = ones &* UInt64(UInt8(ascii: "\n"))
        while index + 8 <= count {
            let word = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: index, as: UInt64.self)) ^ newlines
            let zeroBytes = (word &- ones) & ~word & highBits
            if zeroBytes != 0 { return index + zeroBytes.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < count {
            if buffer[index] == UInt8(ascii: "\n") { return index }
            index += 1
        }
        return nil
    }

    /// Checks the limits once a line ends at `end` (exclusive).
    private func lineTooLong(endingAt end: Int) -> HTTP1ParseError? {
        switch phase {
        case .requestLine, .headerFields:
            if end > limits.maxHeaderBytes { return headTooLarge() }
        case .chunkSize, .chunkDataEnd, .trailers:
            if case .chunkSize = phase, end - lineStart > Self.maxChunkLineBytes {
                return HTTP1ParseError(status: 400, reason: "chunk size line too long")
            }
            if end - bodyStart - body.count > limits.maxHeaderBytes { return chunkedOverheadTooLarge() }
        case .fixedBody, .chunkData:
            break
        }
        return nil
    }

    /// Checks the limits while a line is still unterminated at `end`: its LF
    /// can only come later, so the line will end after `end`.
    private func lineTooLong(unterminatedUpTo end: Int) -> HTTP1ParseError? {
        switch phase {
        case .requestLine, .headerFields:
            if end >= limits.maxHeaderBytes { return headTooLarge() }
        case .chunkSize, .chunkDataEnd, .trailers:
            if case .chunkSize = phase, end - lineStart >= Self.maxChunkLineBytes {
                return HTTP1ParseError(status: 400, reason: "chunk size line too long")
            }
            if end - bodyStart - body.count >= limits.maxHeaderBytes { return chunkedOverheadTooLarge() }
        case .fixedBody, .chunkData:
            break
        }
        return nil
    }

    private func headTooLarge() -> HTTP1ParseError {
        if case .requestLine = phase {
            return HTTP1ParseError(status: 414, reason: "request line longer than \(limits.maxHeaderBytes) bytes")
        }
        return HTTP1ParseError(status: 431, reason: "header block larger than \(limits.maxHeaderBytes) bytes")
    }

    /// Chunk-size lines, chunk CRLFs and trailers carry no body, yet must be
    /// buffered; they share the header budget so a sender cannot make the
    /// relay hold more than head cap + body cap + head cap per request.
    private func chunkedOverheadTooLarge() -> HTTP1ParseError {
        HTTP1ParseError(status: 413, reason: "chunked framing and trailers larger than \(limits.maxHeaderBytes) bytes")
    }

    /// Handles one complete line (without its line terminator), which
    /// starts at `offset` in `buffer`. Returns a result when the request is
    /// finished or refused.
    private mutating func handleLine(_ line: UnsafeRawBufferPointer, at offset: Int, lineEnd: Int,
                                     in buffer: UnsafeRawBufferPointer) -> HTTP1ParseResult? {
        switch phase {
        case .requestLine:
            // RFC 9112 §2.2: ignore empty lines received before the request line.
            if line.isEmpty { return nil }
            if let error = parseRequestLine(line) { return .invalid(error) }
            phase = .headerFields
            fieldsStart = lineEnd
            return nil

        case .headerFields:
            if line.isEmpty { return finishHead(headEnd: lineEnd, in: buffer) }
            if let error = parseHeaderField(line, at: offset - fieldsStart) { return .invalid(error) }
            return nil

        case .chunkSize:
            switch parseChunkSize(line) {
            case .failure(let error):
                return .invalid(error)
            case .success(0):
                phase = .trailers
            case .success(let size):
                if body.count + size > limits.maxBodyBytes {
                    return .invalid(bodyTooLarge())
                }
                phase = .chunkData(remaining: size)
            }
            return nil

        case .chunkDataEnd:
            guard line.isEmpty else {
                return .invalid(HTTP1ParseError(status: 400, reason: "chunk data not followed by CRLF"))
            }
            phase = .chunkSize
            return nil

        case .trailers:
            // RFC 9112 §7.1.2: trailer fields may be discarded; the relay
            // uses none. They end at an empty line.
            if line.isEmpty {
                return .complete(makeRequest(body: body), consumed: lineEnd)
            }
            if containsControlCharacter(line) {
                return .invalid(HTTP1ParseError(status: 400, reason: "control character in a trailer field"))
            }
            return nil

        case .fixedBody, .chunkData:
            return nil
        }
    }

    // MARK: Request line (RFC 9112 §3)

    private mutating func parseRequestLine(_ line: UnsafeRawBufferPointer) -> HTTP1ParseError? {
        // method SP request-target SP HTTP-version, single spaces (§3).
        var index = 0
        while index < line.count && isTokenByte(line[index]) { index += 1 }
        guard index > 0, index < line.count, line[index] == UInt8(ascii: " ") else {
            return HTTP1ParseError(status: 400, reason: "malformed request line: bad method")
        }
        let methodEnd = index
        index += 1
        let targetStart = index
        // Visible ASCII; raw bytes ≥ 0x80 are tolerated (Go's server, which
        // the original relay ran on, accepts them too). No controls, no DEL.
        while index < line.count, line[index] > 0x20, line[index] != 0x7F { index += 1 }
        guard index > targetStart, index < line.count, line[index] == UInt8(ascii: " ") else {
            return HTTP1ParseError(status: 400, reason: "malformed request line: bad request target")
        }
        let targetEnd = index
        index += 1
        let versionBytes = UnsafeRawBufferPointer(rebasing: line[index...])
        // HTTP-version = "HTTP" "/" DIGIT "." DIGIT, case-sensitive (§2.3).
        // (Byte by byte: `starts(with:)` went through generic sequence code.)
        guard versionBytes.count == 8, versionBytes[0] == UInt8(ascii: "H"), versionBytes[1] == UInt8(ascii: "T"),
              versionBytes[2] == UInt8(ascii: "T"), versionBytes[3] == UInt8(ascii: "P"),
              versionBytes[4] == UInt8(ascii: "/"),
              isDigit(versionBytes[5]), versionBytes[6] == UInt8(ascii: "."), isDigit(versionBytes[7])
        else {
            return HTTP1ParseError(status: 400, reason: "malformed request line: bad HTTP version")
        }
        switch (versionBytes[5], versionBytes[7]) {
        case (UInt8(ascii: "1"), UInt8(ascii: "1")): version = .http1_1
        case (UInt8(ascii: "1"), UInt8(ascii: "0")): version = .http1_0
        default:
            return HTTP1ParseError(
                status: 505, reason: "HTTP version \(String(decoding: versionBytes, as: UTF8.self)) not supported")
        }
        method = String(decoding: line[0..<methodEnd], as: UTF8.self)
        target = String(decoding: line[targetStart..<targetEnd], as: UTF8.self)
        return nil
    }

    // MARK: Header fields (RFC 9112 §5, RFC 9110 §5)

    /// `offset`: where the line starts, counted from the first field line.
    private mutating func parseHeaderField(_ line: UnsafeRawBufferPointer, at offset: Int) -> HTTP1ParseError? {
        let first = line[0]
        if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            // RFC 9112 §5.2: obsolete line folding; a server MUST reject it
            // (or replace it by SP); rejecting is simpler and safer.
            return HTTP1ParseError(status: 400, reason: "obsolete line folding in header field")
        }
        var index = 0
        while index < line.count && isTokenByte(line[index]) { index += 1 }
        guard index < line.count, line[index] == UInt8(ascii: ":") else {
            if index < line.count, line[index] == UInt8(ascii: " ") || line[index] == UInt8(ascii: "\t") {
                // RFC 9112 §5.1: no whitespace between field name and colon; MUST 400.
                return HTTP1ParseError(status: 400, reason: "whitespace between header field name and colon")
            }
            return HTTP1ParseError(status: 400, reason: "malformed header field name")
        }
        guard index > 0 else { return HTTP1ParseError(status: 400, reason: "empty header field name") }
        let nameEnd = index
        // RFC 9110 §5.5: field values are VCHAR, obs-text, SP and HTAB; CR,
        // LF and NUL are never allowed, other controls are refused as well.
        if containsControlCharacter(UnsafeRawBufferPointer(rebasing: line[(nameEnd + 1)...])) {
            return HTTP1ParseError(status: 400, reason: "control character in header field value")
        }
        if fieldSpans.count >= limits.maxHeaderCount {
            return HTTP1ParseError(status: 431, reason: "more than \(limits.maxHeaderCount) header fields")
        }
        // Trim optional whitespace around the value (RFC 9110 §5.6.3).
        var valueStart = nameEnd + 1
        var valueEnd = line.count
        while valueStart < valueEnd && isOWS(line[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart && isOWS(line[valueEnd - 1]) { valueEnd -= 1 }
        if fieldSpans.isEmpty { fieldSpans.reserveCapacity(16) }
        fieldSpans.append(HTTPHeaders.Span(nameStart: offset, nameEnd: offset + nameEnd,
                                           valueStart: offset + valueStart, valueEnd: offset + valueEnd))
        return nil
    }

    // MARK: End of head: framing and connection (RFC 9112 §6, §9)

    private mutating func finishHead(headEnd: Int, in buffer: UnsafeRawBufferPointer) -> HTTP1ParseResult? {
        bodyStart = headEnd
        lineStart = headEnd
        scanOffset = headEnd
        // The one copy of the head: the fields' bytes, up to the last value.
        let fieldsEnd = fieldsStart + (fieldSpans.last?.valueEnd ?? 0)
        headers = HTTPHeaders(copying: UnsafeRawBufferPointer(rebasing: buffer[fieldsStart..<fieldsEnd]),
                              spans: fieldSpans)
        fieldSpans = []

        if version == .http1_1 && headers.count(of: "host") != 1 {
            // RFC 9112 §3.2: MUST answer 400 to an HTTP/1.1 request without
            // exactly one Host field.
            return .invalid(HTTP1ParseError(status: 400, reason: "HTTP/1.1 request needs exactly one Host header"))
        }

        if version == .http1_1 {
            keepAlive = !headers.containsToken("close", in: "connection")
        } else {
            // RFC 9112 §9.3: HTTP/1.0 persists only with keep-alive.
            keepAlive = headers.containsToken("keep-alive", in: "connection")
                && !headers.containsToken("close", in: "connection")
        }
        // RFC 9110 §10.1.1: ignore 100-continue in an HTTP/1.0 request.
        expectsContinue = version == .http1_1
            && headers.valueBytes(for: "expect").contains { asciiCaseInsensitiveEquals($0, "100-continue".utf8) }

        let transferEncodings = headers.valueBytes(for: "transfer-encoding")
        let contentLengths = headers.valueBytes(for: "content-length")
        if !transferEncodings.isEmpty {
            if version == .http1_0 {
                // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means faulty framing.
                return .invalid(HTTP1ParseError(status: 400, reason: "Transfer-Encoding in an HTTP/1.0 request"))
            }
            if !contentLengths.isEmpty {
                // RFC 9112 §6.1/§6.3: both present is a smuggling vector; refuse.
                return .invalid(HTTP1ParseError(status: 400, reason: "both Transfer-Encoding and Content-Length"))
            }
            if let error = checkTransferCodings(transferEncodings) { return .invalid(error) }
            phase = .chunkSize
            return nil
        }
        if !contentLengths.isEmpty {
            switch parseContentLength(contentLengths) {
            case .failure(let error): return .invalid(error)
            case .success(let length): phase = .fixedBody(length: length)
            }
            return nil
        }
        // RFC 9112 §6.3 rule 7: no framing header in a request → no body.
        phase = .fixedBody(length: 0)
        return nil
    }

    /// Accepts exactly one coding, `chunked` (RFC 9112 §7). Unknown codings
    /// are 501 (§6.1), `chunked` twice or not last is 400 (§6.3 rule 4).
    private func checkTransferCodings(_ values: HTTPHeaders.ValueBytes) -> HTTP1ParseError? {
        var codingCount = 0
        var firstUnknown: ArraySlice<UInt8>?
        for value in values {
            forEachListElement(of: value) { element in
                let coding = trimmingOWS(element)
                if coding.isEmpty { return }
                // Transfer-coding parameters (";q=…") do not apply to chunked.
                let name = trimmingOWS(coding.prefix { $0 != UInt8(ascii: ";") })
                codingCount += 1
                if firstUnknown == nil && !asciiCaseInsensitiveEquals(name, "chunked".utf8) { firstUnknown = name }
            }
        }
        guard codingCount > 0 else { return HTTP1ParseError(status: 400, reason: "empty Transfer-Encoding") }
        if let firstUnknown {
            return HTTP1ParseError(status: 501, reason: "transfer coding \(asciiLowercased(firstUnknown)) not implemented")
        }
        if codingCount > 1 { return HTTP1ParseError(status: 400, reason: "chunked transfer coding applied twice") }
        return nil
    }

    /// Content-Length: 1*DIGIT; repeated fields or list values must agree
    /// (RFC 9110 §8.6, RFC 9112 §6.3 rule 5). Over the body cap: 413, decided
    /// before any body byte arrives.
    private func parseContentLength(_ values: HTTPHeaders.ValueBytes) -> Result<Int, HTTP1ParseError> {
        var length: Int?
        var failure: HTTP1ParseError?
        for value in values {
            forEachListElement(of: value, omittingEmpty: false) { element in
                guard failure == nil else { return }
                let digits = trimmingOWS(element)
                guard !digits.isEmpty, digits.allSatisfy(isDigit) else {
                    failure = HTTP1ParseError(status: 400, reason: "invalid Content-Length")
                    return
                }
                var parsed = 0
                for digit in digits {
                    // Saturate: anything past the cap is refused anyway.
                    parsed = min(parsed * 10 + Int(digit - UInt8(ascii: "0")), Int.max / 20)
                }
                if let previous = length, previous != parsed {
                    failure = HTTP1ParseError(status: 400, reason: "conflicting Content-Length values")
                    return
                }
                length = parsed
            }
            if let failure { return .failure(failure) }
        }
        guard let length else { return .failure(HTTP1ParseError(status: 400, reason: "invalid Content-Length")) }
        if length > limits.maxBodyBytes { return .failure(bodyTooLarge()) }
        return .success(length)
    }

    private func bodyTooLarge() -> HTTP1ParseError {
        HTTP1ParseError(status: 413, reason: "request body larger than \(limits.maxBodyBytes) bytes")
    }

    // MARK: Chunked framing (RFC 9112 §7.1)

    /// chunk-size [ chunk-ext ]: hex digits, then optionally BWS ";" and
    /// extensions, which are ignored (§7.1.1).
    private func parseChunkSize(_ line: UnsafeRawBufferPointer) -> Result<Int, HTTP1ParseError> {
        var index = 0
        var size = 0
        while index < line.count, let digit = hexValue(line[index]) {
            let (shifted, overflowed) = size.multipliedReportingOverflow(by: 16)
            size = shifted | digit
            if overflowed || size > limits.maxBodyBytes { return .failure(bodyTooLarge()) }
            index += 1
        }
        guard index > 0 else { return .failure(HTTP1ParseError(status: 400, reason: "invalid chunk size")) }
        let rest = trimmingOWS(UnsafeRawBufferPointer(rebasing: line[index...]))
        guard rest.isEmpty || rest.first == UInt8(ascii: ";") else {
            return .failure(HTTP1ParseError(status: 400, reason: "invalid chunk size"))
        }
        if containsControlCharacter(UnsafeRawBufferPointer(rebasing: rest)) {
            return .failure(HTTP1ParseError(status: 400, reason: "control character in chunk extension"))
        }
        return .success(size)
    }

    private func makeRequest(body: [UInt8]) -> HTTP1Request {
        HTTP1Request(method: method, target: target, version: version, headers: headers, body: body,
                     keepAlive: keepAlive)
    }
}
