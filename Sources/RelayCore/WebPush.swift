// The inbound contract of WIRE.md §1, part two: the validation of
// Web Push (RFC 8030) requests (TTL, Urgency, Topic, the aesgcm keys, the
// aes128gcm header) into a `WebPushMessage`.

import Base64URL
import HTTPCore

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

/// The `dh` and `salt` parameter values of an aesgcm request as the sender
/// wrote them (a quoted-string's content; padding or not, either alphabet):
/// metatext-apns hands them to the app as they came (`k`, `s`).
public struct AESGCMParameterText: Sendable, Equatable {
    public var dh: ArraySlice<UInt8>
    public var salt: ArraySlice<UInt8>

    public init(dh: ArraySlice<UInt8>, salt: ArraySlice<UInt8>) {
        self.dh = dh
        self.salt = salt
    }
}

public struct WebPushMessage: Sendable, Equatable {
    public var encoding: ContentEncoding
    /// For aesgcm, the key and salt as written (in place in the request's
    /// header bytes unless quoted); nil for aes128gcm.
    public var aesgcmText: AESGCMParameterText?
    /// The encrypted body, untouched.
    public var body: [UInt8]
    /// Seconds, already capped.
    public var ttl: Int
    public var urgency: Urgency
    /// RFC 8030 §5.4 topic, becomes `apns-collapse-id`.
    public var topic: String?

    public init(encoding: ContentEncoding, body: [UInt8], ttl: Int, urgency: Urgency = .normal, topic: String? = nil,
                aesgcmText: AESGCMParameterText? = nil) {
        self.encoding = encoding
        self.aesgcmText = aesgcmText
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

/// Validates a Web Push request (WIRE.md §1.2) without looking at its
/// route. The size of the APNs payload depends on the route (its dialect,
/// `x`, `i`) and the app (its alert): `makeNotification` refuses (413) a
/// payload over 4096 bytes.
public func parseWebPush(_ request: HTTP1Request, maxTTL: Int = Configuration.maxTTL) -> Result<WebPushMessage, WebPushError> {
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
    var aesgcmText: AESGCMParameterText?
    if isAESGCM {
        switch parseAESGCMKeys(headers) {
        case .success(let (keys, text)):
            encoding = keys
            aesgcmText = text
        case .failure(let error): return .failure(error)
        }
        // draft-ietf-httpbis-encryption-encoding-03 §2: every aesgcm record
        // carries a 2-octet padding length and a 16-octet tag.
        if request.body.count < 18 { return .failure(.badRequest("aesgcm body shorter than one record")) }
    } else {
        if let error = checkAES128GCMHeader(request.body) { return .failure(error) }
        encoding = .aes128gcm
    }

    return .success(WebPushMessage(encoding: encoding, body: request.body, ttl: ttl, urgency: urgency, topic: topic,
                                   aesgcmText: aesgcmText))
}

/// The value of a field that may appear at most once, and whether it
/// appears more than once.
private func singleValue(of name: String, in headers: HTTPHeaders) -> (value: ArraySlice<UInt8>?, repeated: Bool) {
    var values = headers.valueBytes(for: name).makeIterator()
    let first = values.next()
    return (first, first != nil && values.next() != nil)
}

extension Urgency {
    /// RFC 8030 §5.3 values compare case-insensitively.
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

/// `Crypto-Key: dh=…` and `Encryption: salt=…` (WIRE.md §1.2), base64url with
/// or without padding. The key must be an uncompressed P-256 point (65 bytes,
/// 0x04 first) and the salt 16 bytes, or the app cannot decrypt. Decoded
/// straight from the header bytes; returned decoded and as written.
private func parseAESGCMKeys(_ headers: HTTPHeaders)
    -> Result<(ContentEncoding, AESGCMParameterText), WebPushError> {
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
    return .success((.aesgcm(dh: dh, salt: salt), AESGCMParameterText(dh: dhText, salt: saltText)))
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
