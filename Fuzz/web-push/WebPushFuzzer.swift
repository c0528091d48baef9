// Fuzz target: Web Push validation (`parseWebPush`, with the `Crypto-Key` /
// `Encryption` parameter parsers and the RFC 8188 aes128gcm header check) and
// the APNs request built from an accepted message (`makeNotification`).
//
// Input: [mode][…]; mode % 4:
// - 0, 1: a whole request. [field count][fields: name selector, uint16
//   length, value][maxTTL selector (, int64)][extra flag (, uint16 length,
//   extra)][environment and dialect][int64 now][body…]. Name selector: index
//   into `fieldNames`; bit 7 sends the name in upper case. Environment byte:
//   bit 0 development, bit 1 the metatext dialect (the extra text, or "", is
//   its id).
// - 2: `parameters(in:)` on raw text.
// - 3: a parameter list built from the input, parsed back (round trip).
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md); a plain `swift build`
// makes it a replay tool: `web-push-fuzzer <input file>…` runs the checks.

import APNsCore
import Base64URL
import FuzzSupport
import HTTPCore
import RelayCore
import TestSupport

private let fieldNames = [
    "content-encoding", "ttl", "urgency", "topic", "crypto-key", "encryption", "content-length", "host",
    "content-type", "authorization",
]
private let deviceToken = String(repeating: "0123456789abcdef", count: 4)
private let bundleID = "org.joinmastodon.ios"
private let apnsID = "00000000-0000-4000-8000-000000000000"

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    switch input.byte() % 4 {
    case 0, 1: fuzzRequest(&input)
    case 2:
        let text = String(decoding: input.rest(), as: UTF8.self)
        fuzzRawParameters(text)
        trace("parameters: \(parameters(in: text))")
    default: fuzzParameterRoundTrip(&input)
    }
    return 0
}

// MARK: - Whole request

private func fuzzRequest(_ input: inout FuzzInput) {
    var headers = HTTPHeaders()
    for _ in 0..<(input.byte() % 16) {
        let selector = input.byte()
        var name = fieldNames[Int(selector & 0x7F) % fieldNames.count]
        if selector & 0x80 != 0 { name = name.uppercased() }
        headers.append(name: name, value: String(decoding: input.lengthPrefixed(limit: 1024), as: UTF8.self))
    }
    let maxTTL: Int
    switch input.byte() {
    case 0: maxTTL = Configuration.maxTTL
    case 1: maxTTL = input.int64()
    case let selector: maxTTL = Int(selector) * 1000
    }
    let extra: String? = input.bool() ? String(decoding: input.lengthPrefixed(limit: 8192), as: UTF8.self) : nil
    let targetByte = input.byte()
    let environment: APNsEnvironment = targetByte & 1 == 1 ? .development : .production
    let dialect: PayloadDialect = targetByte & 2 == 2 ? .metatext(id: extra ?? "") : .tootRelay(extra: extra)
    let now = input.int64()
    let body = input.rest()
    let request = HTTP1Request(method: "POST", target: "/relay-to/\(environment.rawValue)/\(deviceToken)",
                               version: .http1_1, headers: headers, body: body, keepAlive: true)

    let message: WebPushMessage
    switch parseWebPush(request, maxTTL: maxTTL) {
    case .failure(let error):
        require([400, 413, 415].contains(error.status), "parseWebPush refused with status \(error.status)")
        require(!error.reason.isEmpty, "empty reason")
        trace("refused: \(error.status) \(error.reason)")
        return
    case .success(let accepted):
        message = accepted
    }
    checkAccepted(message, headers: headers, body: body, maxTTL: maxTTL)

    let target = RelayTarget(environment: environment, deviceToken: deviceToken, dialect: dialect)
    let notification: APNsNotification
    let content: PayloadContent
    do {
        let made = try makeNotification(target: target, message: message, topic: bundleID, credential: .primary,
                                        apnsID: apnsID, now: now)
        notification = made.notification
        content = made.ciphertextDropped ? .withoutCiphertext : .whole
    } catch {
        // Only a body over 4096 bytes, or a route that leaves no room even
        // without the body, is refused for its size.
        require(error.status == 413, "makeNotification threw status \(error.status)")
        require(message.body.count > webPushMaxBodyBytes
                    || payloadSize(message, dialect, content: .withoutCiphertext) > apnsMaxPayloadBytes,
                "413 for a payload that fits without its ciphertext")
        trace("accepted, then 413: \(error.reason)")
        return
    }
    // The ciphertext goes whenever it fits, and only then.
    require((content == .whole) == (payloadSize(message, dialect, content: .whole) <= apnsMaxPayloadBytes),
            "ciphertext dropped from a payload that fits, or kept in one that does not")
    checkNotification(notification, message: message, target: target, content: content, now: now)
    trace("accepted \(message.encoding == .aes128gcm ? "aes128gcm" : "aesgcm"), TTL \(message.ttl), "
        + "\(message.urgency), payload \(notification.payload.count) bytes, headers \(notification.headers.map(\.value))")
}

/// What an accepted message must satisfy, recomputed independently from the
/// request.
private func checkAccepted(_ message: WebPushMessage, headers: HTTPHeaders, body: [UInt8], maxTTL: Int) {
    require(message.body == body, "message body differs from the request body")

    // TTL: the digits' value, capped at maxTTL (and at anything too large for Int).
    let ttlText = headers["ttl"] ?? ""
    let significant = ttlText.utf8.drop { $0 == UInt8(ascii: "0") }
    let cap = max(0, maxTTL)
    var expectedTTL = 0
    if significant.count > 18 {
        expectedTTL = cap
    } else {
        for digit in significant { expectedTTL = expectedTTL * 10 + Int(digit - UInt8(ascii: "0")) }
        expectedTTL = min(expectedTTL, cap)
    }
    require(message.ttl == expectedTTL, "TTL \(message.ttl) for header \(describe(ttlText.utf8)), cap \(maxTTL)")

    let urgencyText = headers["urgency"].map { asciiLowercased($0) } ?? "normal"
    require(message.urgency.rawValue == urgencyText, "urgency \(message.urgency) for \(describe(urgencyText.utf8))")

    let topicText = headers["topic"] ?? ""
    require(message.topic == (topicText.isEmpty ? nil : topicText), "topic \(String(describing: message.topic))")
    if let topic = message.topic {
        require(topic.utf8.count <= 32 && topic.utf8.allSatisfy { base64URLAlphabet.contains($0) },
                "topic outside RFC 8030 §5.4: \(describe(topic.utf8))")
    }

    switch message.encoding {
    case .aesgcm(let dh, let salt):
        require(asciiLowercased(headers["content-encoding"] ?? "") == "aesgcm", "aesgcm for another encoding")
        require(message.aesgcmText.map { String(decoding: $0.dh, as: UTF8.self) }
                    == parameterValue(named: "dh", in: headers.values(for: "crypto-key")), "dh text differs")
        require(message.aesgcmText.map { String(decoding: $0.salt, as: UTF8.self) }
                    == parameterValue(named: "salt", in: headers.values(for: "encryption")), "salt text differs")
        require(dh.count == 65 && dh.first == 0x04, "dh is not an uncompressed P-256 point")
        require(salt.count == 16, "salt of \(salt.count) bytes")
        require(body.count >= 18, "aesgcm body shorter than one record")
        let dhText = parameterValue(named: "dh", in: headers.values(for: "crypto-key"))
        let saltText = parameterValue(named: "salt", in: headers.values(for: "encryption"))
        require(dhText.flatMap { try? base64URLDecode($0) } == dh, "dh differs from the Crypto-Key header")
        require(saltText.flatMap { try? base64URLDecode($0) } == salt, "salt differs from the Encryption header")
    case .aes128gcm:
        require(asciiLowercased(headers["content-encoding"] ?? "") == "aes128gcm", "aes128gcm for another encoding")
        // RFC 8188 §2.1: salt(16) rs(4) idlen(1) keyid(65, 0x04 first), then a record of ≥ 17 bytes.
        require(body.count >= 21 + 65 + 17, "aes128gcm body of \(body.count) bytes accepted")
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        require(recordSize >= 18 && body[20] == 65 && body[21] == 0x04, "malformed RFC 8188 header accepted")
    }
}

/// The exact size of the dialect's payload.
private func payloadSize(_ message: WebPushMessage, _ dialect: PayloadDialect, content: PayloadContent) -> Int {
    switch dialect {
    case .tootRelay(let extra): apnsPayloadSize(for: message, extra: extra, content: content)
    case .metatext(let id): metatextPayloadSize(for: message, id: id, content: content)
    }
}

private func checkNotification(_ notification: APNsNotification, message: WebPushMessage, target: RelayTarget,
                               content: PayloadContent, now: Int) {
    let payload = notification.payload
    let size = payloadSize(message, target.dialect, content: content)
    require(payload.count <= apnsMaxPayloadBytes, "payload of \(payload.count) bytes")
    require(payload.count == size, "payload of \(payload.count) bytes, the size function says \(size)")
    require(String(validating: payload, as: UTF8.self) != nil, "payload is not UTF-8")

    var parser = JSONParser(payload)
    guard let document = parser.parseDocument() else {
        require(false, "payload is not JSON: \(describe(payload, limit: 400))")
        return
    }
    guard case .object(let members) = document else {
        require(false, "payload is not a JSON object")
        return
    }
    let keys = members.map { String(decoding: $0.key, as: UTF8.self) }
    require(Set(keys).count == keys.count, "duplicate keys in the payload: \(keys)")
    switch target.dialect {
    case .tootRelay:
        require(makeAPNsPayload(for: message, extra: target.extra, content: content) == payload,
                "makeAPNsPayload differs")
        checkTootRelayMembers(members, keys: keys, message: message, target: target, content: content)
    case .metatext(let id):
        require(makeMetatextPayload(for: message, id: id, content: content) == payload, "makeMetatextPayload differs")
        checkMetatextMembers(members, keys: keys, message: message, id: id, content: content)
    }
    checkHeaders(notification, message: message, target: target, now: now)
}

/// metatext-apns' keys: i, m (padded base64url of the body), s and k (the
/// header parameters as written) for aesgcm only.
private func checkMetatextMembers(_ members: [JSONMember], keys: [String], message: WebPushMessage, id: String,
                                  content: PayloadContent) {
    let expectedAPS = JSONValue.object([
        JSONMember(key: Array("alert".utf8),
                   value: .object([JSONMember(key: Array("loc-key".utf8),
                                              value: .string(Array("apns-default-message".utf8)))])),
        JSONMember(key: Array("mutable-content".utf8), value: .number(Array("1".utf8))),
    ])
    require(member("aps", of: members) == expectedAPS, "aps is not metatext-apns' alert")
    require(member("i", of: members) == .string(Array(id.utf8)), "i is not the id")
    if content == .whole {
        guard case .string(let body)? = member("m", of: members) else {
            require(false, "no m")
            return
        }
        require(body.count % 4 == 0 && !body.contains(UInt8(ascii: "+")) && !body.contains(UInt8(ascii: "/")),
                "m is not padded base64url")
        require(body.withUnsafeBytes { try? base64URLDecode($0) } == message.body, "m does not decode to the body")
    } else {
        require(member("m", of: members) == nil, "m in a payload without its ciphertext")
    }
    switch message.encoding {
    case .aesgcm:
        let text = message.aesgcmText
        require(member("s", of: members) == text.map { .string(Array($0.salt)) }, "s is not the salt as written")
        require(member("k", of: members) == text.map { .string(Array($0.dh)) }, "k is not the dh as written")
    case .aes128gcm:
        require(member("k", of: members) == nil && member("s", of: members) == nil, "k or s for aes128gcm")
    }
    let allowed: Set = ["aps", "i", "m", "s", "k"]
    require(keys.allSatisfy(allowed.contains), "unexpected keys: \(keys)")
}

private func checkTootRelayMembers(_ members: [JSONMember], keys: [String], message: WebPushMessage,
                                   target: RelayTarget, content: PayloadContent) {
    let expectedAPS = JSONValue.object([
        JSONMember(key: Array("alert".utf8), value: .string(Array("🎺".utf8))),
        JSONMember(key: Array("mutable-content".utf8), value: .number(Array("1".utf8))),
        JSONMember(key: Array("content-available".utf8), value: .number(Array("1".utf8))),
    ])
    require(member("aps", of: members) == expectedAPS, "aps is not the fixed alert")

    if content == .whole {
        require(z85Member("p", of: members) == message.body, "p does not decode (z85) to the body")
    } else {
        require(member("p", of: members) == nil, "p in a payload without its ciphertext")
    }
    switch message.encoding {
    case .aesgcm(let dh, let salt):
        require(z85Member("k", of: members) == dh, "k does not decode to dh")
        require(z85Member("s", of: members) == salt, "s does not decode to salt")
    case .aes128gcm:
        require(member("k", of: members) == nil && member("s", of: members) == nil, "k or s for aes128gcm")
    }
    if let extra = target.extra {
        require(member("x", of: members) == .string(Array(extra.utf8)), "x is not the extra path")
    } else {
        require(member("x", of: members) == nil, "x without an extra path")
    }
    let allowed: Set = ["aps", "p", "k", "s", "x"]
    require(keys.allSatisfy(allowed.contains), "unexpected keys: \(keys)")
}

private func checkHeaders(_ notification: APNsNotification, message: WebPushMessage, target: RelayTarget, now: Int) {
    let expiration: Int
    if message.ttl == 0 {
        expiration = 0
    } else {
        let (sum, overflowed) = now.addingReportingOverflow(message.ttl)
        expiration = overflowed ? Int.max : sum
    }
    var expectedHeaders = [
        HTTPField(name: "apns-push-type", value: "alert"),
        HTTPField(name: "apns-topic", value: bundleID),
        HTTPField(name: "apns-priority", value: String(message.urgency.apnsPriority)),
        HTTPField(name: "apns-expiration", value: String(expiration)),
    ]
    if let topic = message.topic { expectedHeaders.append(HTTPField(name: "apns-collapse-id", value: topic)) }
    expectedHeaders.append(HTTPField(name: "apns-id", value: apnsID))
    require(notification.headers == expectedHeaders, "APNs headers \(notification.headers)")
    require(notification.path == "/3/device/" + target.deviceToken, "path \(notification.path)")
    require(notification.environment == target.environment && notification.deviceToken == target.deviceToken
                && notification.apnsID == apnsID && notification.ttl == message.ttl, "notification fields")
}

private func member(_ name: String, of members: [JSONMember]) -> JSONValue? {
    let key = Array(name.utf8)
    return members.first { $0.key == key }?.value
}

/// The z85-decoded content of a string member, nil when absent or not z85.
private func z85Member(_ name: String, of members: [JSONMember]) -> [UInt8]? {
    guard case .string(let text)? = member(name, of: members) else { return nil }
    return text.withUnsafeBytes { try? Z85.decode($0) }
}

// MARK: - Parameter lists

/// Invariants of `parameters(in:)` on any text.
private func fuzzRawParameters(_ text: String) {
    let found = parameters(in: text)
    let separators = text.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: ",") || $1 == UInt8(ascii: ";") ? 1 : 0) }
    require(found.count <= separators + 1, "\(found.count) parameters from \(separators) separators")
    var seen = Set<String>()
    for parameter in found {
        let name = Array(parameter.name.utf8)
        require(!name.isEmpty, "empty parameter name")
        require(!name.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") || $0 == UInt8(ascii: "=") },
                "name not lowercased or contains '=': \(describe(name))")
        require(trimmingOWS(name).count == name.count, "name not trimmed: \(describe(name))")
        // Lookups rescan the text: check the first few names only, or a long
        // list of distinct names makes each input quadratic.
        if seen.count < 8, seen.insert(parameter.name).inserted {
            // The first parameter of a name is what a lookup finds, in any case.
            require(parameterValue(named: parameter.name, in: [text]) == parameter.value, "lookup differs")
            // ASCII-only case change: names compare ASCII-case-insensitively (non-ASCII bytes as is).
            let upper = String(decoding: name.map { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") ? $0 - 32 : $0 },
                               as: UTF8.self)
            require(parameterValue(named: upper, in: ["", text]) == parameter.value, "case-insensitive lookup differs")
        }
    }
}

/// Builds `name=value` entries joined by `,`/`;` with optional whitespace
/// around everything, some values quoted with escapes, and checks that
/// `parameters(in:)` gives back exactly the (lowercased) names and values.
private func fuzzParameterRoundTrip(_ input: inout FuzzInput) {
    let whitespace = ["", " ", "\t", " \t "]
    let nameAlphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!#$%&'*+^`|~".utf8)
    var text: [UInt8] = []
    var expected: [(name: String, value: String)] = []
    for index in 0..<(input.byte() % 8) {
        let shape = input.byte()
        if index > 0 { text.append(shape & 1 == 0 ? UInt8(ascii: ";") : UInt8(ascii: ",")) }
        text += whitespace[Int(shape >> 1) % 4].utf8
        let name = input.bytes(1 + Int(input.byte() % 12)).map { nameAlphabet[Int($0) % nameAlphabet.count] }
        guard !name.isEmpty else { break }
        text += name
        text += whitespace[Int(shape >> 3) % 4].utf8
        text.append(UInt8(ascii: "="))
        text += whitespace[Int(shape >> 5) % 4].utf8
        let raw = input.bytes(Int(input.byte() % 100))
        let value: [UInt8]
        if shape & 0x80 != 0 {
            // A quoted-string (RFC 9110 §5.6.4) of printable ASCII, `"` and `\` escaped.
            value = raw.map { 0x20 + $0 % 0x5F }
            text.append(UInt8(ascii: "\""))
            for byte in value {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { text.append(UInt8(ascii: "\\")) }
                text.append(byte)
            }
            text.append(UInt8(ascii: "\""))
        } else {
            value = raw.map { base64URLAlphabet[Int($0) % 64] }
            text += value
        }
        text += whitespace[Int(input.byte()) % 4].utf8
        expected.append((asciiLowercased(name), String(decoding: value, as: UTF8.self)))
    }
    let found = parameters(in: String(decoding: text, as: UTF8.self))
    require(found.count == expected.count && zip(found, expected).allSatisfy { $0.name == $1.name && $0.value == $1.value },
            "parameters(in: \(describe(text, limit: 300))) = \(found), expected \(expected)")
    trace("round trip of \(describe(text, limit: 300)): \(found.count) parameters")
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (Fuzz/README.md)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebPush(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum WebPushReplay { static func main() { replayInputFiles(tool: "web-push-fuzzer", fuzzOne) } }
#endif
