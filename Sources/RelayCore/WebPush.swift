// The inbound contract of DESIGN §1: routing of `/relay-to/...` and the
// validation of Web Push (RFC 8030) requests.

/// Which APNs service a subscription's notifications go to.
public enum APNsEnvironment: String, Sendable, Equatable {
    case production
    case development
}

/// Where one relay request goes: the path `/relay-to/<env>/<token>[/<extra…>]`.
public struct RelayTarget: Sendable, Equatable {
    public var environment: APNsEnvironment
    /// Lowercased hex, even length, 64–200 digits.
    public var deviceToken: String
    /// The rest of the path after `<token>/`, percent-decoded; nil when absent
    /// or empty. Sent to the app as `x`.
    public var extra: String?

    public init(environment: APNsEnvironment, deviceToken: String, extra: String?) {
        self.environment = environment
        self.deviceToken = deviceToken
        self.extra = extra
    }
}

public enum Route: Sendable, Equatable {
    case relay(RelayTarget)
    /// `GET` or `HEAD /relay-to/_health`.
    case health
    /// 405; `allow` is the value for the `Allow` header (RFC 9110 §15.5.6).
    case methodNotAllowed(allow: String)
    case notFound
}

/// Routes a request (DESIGN §1).
///
/// - The query string (and a fragment, should a client send one) is ignored.
/// - An absolute-form target (`http://host/path`, RFC 9112 §3.2.2) is routed
///   by its path.
/// - `GET`/`HEAD /relay-to/_health` → health (HEAD: same answer without a body,
///   as monitors probe with either); other methods there → 405 `Allow: GET, HEAD`.
/// - Any other method on `/relay-to/…` → 405 `Allow: POST`, whether or not the
///   rest of the path is valid.
/// - `POST` with an unknown environment or a malformed token → 404.
/// - `<extra…>` is percent-decoded; a `%` not followed by two hex digits is
///   kept literally (lenient: the path came from the app's own registration,
///   and refusing would make Mastodon delete the subscription). Decoded bytes
///   that are not valid UTF-8 become U+FFFD, which is what Go's JSON encoder
///   did in the original relay.
public func route(method: String, target: String) -> Route {
    // Scanned as contiguous UTF-8 (in place for a native String).
    var target = target
    return target.withUTF8 { route(method: method, target: $0) }
}

private func route(method: String, target: UnsafeBufferPointer<UInt8>) -> Route {
    let path = requestPath(of: target[...])
    let prefix = "/relay-to/".utf8
    guard path.starts(with: prefix) else { return .notFound }
    let rest = path.dropFirst(prefix.count)

    if rest.elementsEqual("_health".utf8) {
        return method == "GET" || method == "HEAD" ? .health : .methodNotAllowed(allow: "GET, HEAD")
    }
    guard method == "POST" else { return .methodNotAllowed(allow: "POST") }

    let slash = UInt8(ascii: "/")
    guard let environmentEnd = rest.firstIndex(of: slash) else { return .notFound }
    let environmentName = rest[..<environmentEnd]
    let environment: APNsEnvironment
    if environmentName.elementsEqual(APNsEnvironment.production.rawValue.utf8) {
        environment = .production
    } else if environmentName.elementsEqual(APNsEnvironment.development.rawValue.utf8) {
        environment = .development
    } else {
        return .notFound
    }
    let afterEnvironment = rest[(environmentEnd + 1)...]
    let tokenEnd = afterEnvironment.firstIndex(of: slash) ?? afterEnvironment.endIndex
    guard let deviceToken = normalizedDeviceToken(afterEnvironment[..<tokenEnd]) else { return .notFound }

    var extra: String?
    if tokenEnd != afterEnvironment.endIndex {
        let rawExtra = afterEnvironment[(tokenEnd + 1)...]
        if !rawExtra.isEmpty { extra = String(decoding: percentDecoded(rawExtra), as: UTF8.self) }
    }
    return .relay(RelayTarget(environment: environment, deviceToken: deviceToken, extra: extra))
}

private typealias TargetBytes = Slice<UnsafeBufferPointer<UInt8>>

/// The path of a request target: no query, no fragment, no scheme and
/// authority for absolute-form.
private func requestPath(of target: TargetBytes) -> TargetBytes {
    var path = target
    if let end = path.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
        path = path[..<end]
    }
    if path.first != UInt8(ascii: "/") {
        for scheme in ["http://".utf8, "https://".utf8]
        where path.count >= scheme.count && asciiCaseInsensitiveEquals(path.prefix(scheme.count), scheme) {
            let afterScheme = path.dropFirst(scheme.count)
            return afterScheme[(afterScheme.firstIndex(of: UInt8(ascii: "/")) ?? afterScheme.endIndex)...]
        }
    }
    return path
}

/// The device token lowercased, if it is even-length hex of 64–200 digits
/// (Apple documents tokens as variable length; they are 32 bytes today).
private func normalizedDeviceToken(_ bytes: TargetBytes) -> String? {
    guard (64...200).contains(bytes.count), bytes.count % 2 == 0, bytes.allSatisfy({ hexValue($0) != nil })
    else { return nil }
    // Hex digits are ASCII: lowercase straight into the String's storage.
    return String(unsafeUninitializedCapacity: bytes.count) { buffer in
        var count = 0
        for byte in bytes {
            buffer[count] = asciiLowercase(byte)
            count += 1
        }
        return count
    }
}

/// Percent-decodes (RFC 3986 §2.1), keeping malformed escapes literally.
func percentDecoded(_ bytes: some Collection<UInt8>) -> [UInt8] {
    let input = Array(bytes)
    var output: [UInt8] = []
    output.reserveCapacity(input.count)
    var index = 0
    while index < input.count {
        if input[index] == UInt8(ascii: "%"), index + 2 < input.count,
           let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) {
            output.append(UInt8(high << 4 | low))
            index += 3
        } else {
            output.append(input[index])
            index += 1
        }
    }
    return output
}

// MARK: - Web Push message

public enum ContentEncoding: Sendable, Equatable {
    /// Legacy draft encoding: key and salt travel in headers (`Crypto-Key: dh=`,
    /// `Encryption: salt=`), decoded from base64url.
    case aesgcm(dh: [UInt8], salt: [UInt8])
    /// RFC 8188 / RFC 8291: salt and key are in the body's header.
    case aes128gcm
}

/// RFC 8030 §5.3.
public enum Urgency: String, Sendable, Equatable, CaseIterable {
    case veryLow = "very-low"
    case low
    case normal
    case high

    /// APNs priority: 5 lets iOS save power, 10 delivers at once.
    public var apnsPriority: Int {
        switch self {
        case .veryLow, .low: 5
        case .normal, .high: 10
        }
    }
}

public struct WebPushMessage: Sendable, Equatable {
    public var encoding: ContentEncoding
    /// The encrypted body, untouched.
    public var body: [UInt8]
    /// Seconds, already capped.
    public var ttl: Int
    public var urgency: Urgency
    /// RFC 8030 §5.4 topic, becomes `apns-collapse-id`.
    public var topic: String?

    public init(encoding: ContentEncoding, body: [UInt8], ttl: Int, urgency: Urgency = .normal, topic: String? = nil) {
        self.encoding = encoding
        self.body = body
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
    }
}

/// A refused Web Push request: the status to answer (400, 413 or 415) and a
/// one-line reason for the body and the log.
public struct WebPushError: Error, Sendable, Equatable {
    public var status: Int
    public var reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    static func badRequest(_ reason: String) -> WebPushError { WebPushError(status: 400, reason: reason) }
}

/// 30 days: APNs' own storage limit.
public let defaultMaxTTL = 2_592_000

/// Validates a Web Push request (DESIGN §1) without looking at its route.
///
/// Also refuses (413) a body whose APNs payload could not fit in 4096 bytes
/// even without `x`; `makeNotification` checks again with `x`.
public func parseWebPush(_ request: HTTP1Request, maxTTL: Int = defaultMaxTTL) -> Result<WebPushMessage, WebPushError> {
    // Header values are read as bytes in place: only the Topic, when there
    // is one, becomes a String.
    let headers = request.headers

    let contentEncoding = headers.firstValueBytes(for: "content-encoding") ?? []
    let isAESGCM: Bool
    if asciiCaseInsensitiveEquals(contentEncoding, "aesgcm".utf8) {
        isAESGCM = true
    } else if asciiCaseInsensitiveEquals(contentEncoding, "aes128gcm".utf8) {
        isAESGCM = false
    } else if contentEncoding.isEmpty {
        return .failure(WebPushError(status: 415, reason: "missing Content-Encoding (aesgcm or aes128gcm)"))
    } else {
        let text = asciiLowercased(String(decoding: contentEncoding, as: UTF8.self))
        return .failure(WebPushError(status: 415, reason: "unsupported Content-Encoding \(String(text.prefix(40)))"))
    }

    let ttl: Int
    switch parseTTL(headers.valueBytes(for: "ttl"), maxTTL: maxTTL) {
    case .success(let value): ttl = value
    case .failure(let error): return .failure(error)
    }

    var urgency = Urgency.normal
    let urgencyField = singleValue(of: "urgency", in: headers)
    if urgencyField.repeated { return .failure(.badRequest("repeated Urgency header")) }
    if let value = urgencyField.value {
        guard let parsed = Urgency(caseInsensitive: value) else {
            return .failure(.badRequest("Urgency must be very-low, low, normal or high"))
        }
        urgency = parsed
    }

    var topic: String?
    let topicField = singleValue(of: "topic", in: headers)
    if topicField.repeated { return .failure(.badRequest("repeated Topic header")) }
    // An empty Topic is treated as absent, as the original relay did.
    if let value = topicField.value, !value.isEmpty {
        // RFC 8030 §5.4: at most 32 characters of the base64url alphabet.
        guard value.count <= 32, isBase64URLAlphabet(value) else {
            return .failure(.badRequest("Topic must be at most 32 base64url characters"))
        }
        topic = String(decoding: value, as: UTF8.self)
    }

    let encoding: ContentEncoding
    if isAESGCM {
        switch parseAESGCMKeys(headers) {
        case .success(let keys): encoding = keys
        case .failure(let error): return .failure(error)
        }
        // draft-ietf-httpbis-encryption-encoding-03 §2: every aesgcm record
        // carries a 2-octet padding length and a 16-octet tag.
        if request.body.count < 18 { return .failure(.badRequest("aesgcm body shorter than one record")) }
    } else {
        if let error = checkAES128GCMHeader(request.body) { return .failure(error) }
        encoding = .aes128gcm
    }

    let message = WebPushMessage(encoding: encoding, body: request.body, ttl: ttl, urgency: urgency, topic: topic)
    let size = apnsPayloadSize(for: message, extra: nil)
    if size > apnsMaxPayloadBytes {
        return .failure(WebPushError(
            status: 413, reason: "body of \(request.body.count) bytes makes a \(size)-byte APNs payload (max 4096)"))
    }
    return .success(message)
}

/// The value of a field that may appear at most once, and whether it
/// appears more than once.
private func singleValue(of name: String, in headers: HTTPHeaders) -> (value: ArraySlice<UInt8>?, repeated: Bool) {
    var values = headers.valueBytes(for: name).makeIterator()
    let first = values.next()
    return (first, first != nil && values.next() != nil)
}

extension Urgency {
    /// RFC 8030 §5.3 values compare case-insensitively, as before.
    init?(caseInsensitive bytes: ArraySlice<UInt8>) {
        if asciiCaseInsensitiveEquals(bytes, "very-low".utf8) {
            self = .veryLow
        } else if asciiCaseInsensitiveEquals(bytes, "low".utf8) {
            self = .low
        } else if asciiCaseInsensitiveEquals(bytes, "normal".utf8) {
            self = .normal
        } else if asciiCaseInsensitiveEquals(bytes, "high".utf8) {
            self = .high
        } else {
            return nil
        }
    }
}

/// RFC 8030 §5.2: TTL is required, a non-negative integer of seconds.
/// Larger than `maxTTL` (including values too large for Int) is capped.
/// Repeated fields must agree.
private func parseTTL(_ values: HTTPHeaders.ValueBytes, maxTTL: Int) -> Result<Int, WebPushError> {
    guard let first = values.first else { return .failure(.badRequest("missing TTL header")) }
    if values.contains(where: { !sameFieldValue($0, first) }) {
        return .failure(.badRequest("conflicting TTL headers"))
    }
    guard !first.isEmpty, first.allSatisfy(isDigit) else {
        return .failure(.badRequest("TTL must be a non-negative integer"))
    }
    let cap = max(0, maxTTL)
    var ttl = 0
    for digit in first {
        let (shifted, overflowed) = ttl.multipliedReportingOverflow(by: 10)
        ttl = shifted + Int(digit - UInt8(ascii: "0"))
        if overflowed || ttl > cap || ttl < 0 { return .success(cap) }
    }
    return .success(ttl)
}

/// `Crypto-Key: dh=…` and `Encryption: salt=…` (DESIGN §1), base64url with
/// or without padding. The key must be an uncompressed P-256 point (65 bytes,
/// 0x04 first) and the salt 16 bytes, or the app cannot decrypt. Decoded
/// straight from the header bytes.
private func parseAESGCMKeys(_ headers: HTTPHeaders) -> Result<ContentEncoding, WebPushError> {
    guard let dhText = parameterValueBytes(named: "dh", in: headers.valueBytes(for: "crypto-key")) else {
        return .failure(.badRequest("aesgcm needs Crypto-Key with a dh parameter"))
    }
    guard let saltText = parameterValueBytes(named: "salt", in: headers.valueBytes(for: "encryption")) else {
        return .failure(.badRequest("aesgcm needs Encryption with a salt parameter"))
    }
    guard let dh = dhText.withUnsafeBytes({ try? base64URLDecode($0) }) else {
        return .failure(.badRequest("Crypto-Key dh is not base64url"))
    }
    guard dh.count == 65, dh.first == 0x04 else {
        return .failure(.badRequest("Crypto-Key dh is not an uncompressed P-256 public key"))
    }
    guard let salt = saltText.withUnsafeBytes({ try? base64URLDecode($0) }) else {
        return .failure(.badRequest("Encryption salt is not base64url"))
    }
    guard salt.count == 16 else { return .failure(.badRequest("Encryption salt is not 16 bytes")) }
    return .success(.aesgcm(dh: dh, salt: salt))
}

/// RFC 8188 §2.1 header: salt (16) | rs (uint32) | idlen (1) | keyid (idlen).
/// RFC 8291 §4: for Web Push, keyid is the sender's 65-byte uncompressed
/// P-256 key. RFC 8188 §2: rs ≥ 18, and a record holds at least a 16-byte tag
/// and a 1-byte padding delimiter, so at least 17 bytes follow the header.
private func checkAES128GCMHeader(_ body: [UInt8]) -> WebPushError? {
    guard body.count >= 21 else { return .badRequest("aes128gcm body shorter than its header") }
    let recordSize = UInt32(body[16]) << 24 | UInt32(body[17]) << 16 | UInt32(body[18]) << 8 | UInt32(body[19])
    guard recordSize >= 18 else { return .badRequest("aes128gcm record size below 18") }
    let keyIDLength = Int(body[20])
    guard keyIDLength == 65 else { return .badRequest("aes128gcm keyid is not a 65-byte P-256 public key") }
    guard body.count > 21, body[21] == 0x04 else {
        return .badRequest("aes128gcm keyid is not an uncompressed P-256 public key")
    }
    guard body.count >= 21 + keyIDLength + 17 else { return .badRequest("aes128gcm body has no complete record") }
    return nil
}

/// The first `name=value` among header values that are `,`/`;`-separated
/// parameter lists (`dh=…;p256ecdsa=…`, `keyid=a;dh=…, keyid=b;dh=…`).
/// Names compare case-insensitively; whitespace around names, `=` and values
/// is tolerated; a value may be a quoted-string (RFC 9110 §5.6.4).
func parameterValue(named name: String, in values: [String]) -> String? {
    for value in values {
        var text = value
        let found = text.withUTF8 { bytes in
            firstParameter(named: name, in: bytes).map { parameterText(bytes[$0.range], quoted: $0.quoted) }
        }
        if let found { return String(decoding: found, as: UTF8.self) }
    }
    return nil
}

/// `parameterValue(named:in:)` over header values in place: the value's
/// bytes are a slice of the headers' unless it was a quoted-string.
///
/// Mastodon's Crypto-Key (`dh=…;p256ecdsa=…`) would otherwise cost a name and
/// a value String per parameter on every request.
func parameterValueBytes(named name: String, in values: HTTPHeaders.ValueBytes) -> ArraySlice<UInt8>? {
    for value in values {
        let found = value.withUnsafeBufferPointer { firstParameter(named: name, in: $0) }
        guard let found else { continue }
        let bytes = value[(value.startIndex + found.range.lowerBound)..<(value.startIndex + found.range.upperBound)]
        return found.quoted ? ArraySlice(unquoted(Array(bytes))) : bytes
    }
    return nil
}

private func parameterText(_ value: Slice<UnsafeBufferPointer<UInt8>>, quoted: Bool) -> [UInt8] {
    quoted ? unquoted(Array(value)) : Array(value)
}

/// Where the value of the first entry of `bytes` called `wanted` is (OWS
/// trimmed; `quoted` when it is a quoted-string still to unquote): the same
/// splitting as `parameters(in:)` (`,`/`;` outside quotes, entries without
/// `=` skipped). Scans in place.
private func firstParameter(named wanted: String, in bytes: UnsafeBufferPointer<UInt8>)
    -> (range: Range<Int>, quoted: Bool)? {
    var entryStart = 0
    var inQuotes = false
    var escaped = false
    var quotedValue = false
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if inQuotes {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = false
            }
        } else if byte == UInt8(ascii: ",") || byte == UInt8(ascii: ";") {
            if let value = parameterEntryValue(bytes[entryStart..<index], named: wanted.utf8) {
                return (value, quotedValue)
            }
            entryStart = index + 1
            quotedValue = false
        } else if byte == UInt8(ascii: "\"") {
            inQuotes = true
            quotedValue = true
        }
        index += 1
    }
    return parameterEntryValue(bytes[entryStart..<bytes.count], named: wanted.utf8).map { ($0, quotedValue) }
}

/// The range of the entry's value if the entry is `wanted=value`.
private func parameterEntryValue(_ entry: Slice<UnsafeBufferPointer<UInt8>>, named wanted: String.UTF8View)
    -> Range<Int>? {
    guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { return nil }
    let name = trimmingOWS(entry[..<equals])
    guard !name.isEmpty, asciiCaseInsensitiveEquals(name, wanted) else { return nil }
    let value = trimmingOWS(entry[(equals + 1)...])
    return value.startIndex..<value.endIndex
}

/// Splits a parameter list into (lowercased name, value) pairs; entries
/// without `=` are skipped.
func parameters(in text: String) -> [(name: String, value: String)] {
    var result: [(name: String, value: String)] = []
    var entry: [UInt8] = []
    var inQuotes = false
    var escaped = false
    var quotedValue = false

    func finishEntry() {
        defer {
            entry.removeAll(keepingCapacity: true)
            quotedValue = false
        }
        guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { return }
        let name = trimmingOWS(entry[..<equals])
        guard !name.isEmpty else { return }
        var value = Array(trimmingOWS(entry[(equals + 1)...]))
        if quotedValue {
            // Remove the quotes and escapes kept while scanning.
            value = unquoted(value)
        }
        result.append((asciiLowercased(name), String(decoding: value, as: UTF8.self)))
    }

    for byte in text.utf8 {
        if inQuotes {
            entry.append(byte)
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = false
            }
            continue
        }
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: ";"):
            finishEntry()
        case UInt8(ascii: "\""):
            inQuotes = true
            quotedValue = true
            entry.append(byte)
        default:
            entry.append(byte)
        }
    }
    finishEntry()
    return result
}

/// The content of a quoted-string, escapes resolved; input that is not a
/// single quoted-string is returned as is.
private func unquoted(_ value: [UInt8]) -> [UInt8] {
    guard value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") else { return value }
    var output: [UInt8] = []
    var escaped = false
    for byte in value[1..<(value.count - 1)] {
        if !escaped && byte == UInt8(ascii: "\\") {
            escaped = true
            continue
        }
        escaped = false
        output.append(byte)
    }
    return output
}
