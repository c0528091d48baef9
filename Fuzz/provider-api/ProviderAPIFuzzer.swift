// Fuzz target provider-api: the provider API's protocol on
// arbitrary bytes: the strict JSON parser, gorush's `/api/push` decoding
// and mapping, and the APNs-shaped proxy request.
//
// Input: [mode][…]. mode % 4:
// - 0: the rest is a `/api/push` body, decoded under small limits (body
//   size, notifications and tokens from the next bytes' low bits), each
//   notification mapped.
// - 1: the rest is a body whose notifications are wrapped around the input:
//   `{"notifications":[{"platform":1,"tokens":["<hex>"],<rest>}]}`, so the
//   fuzzer works on the fields rather than the envelope.
// - 2: the proxy: [token length][token][header text length, 2 bytes][header
//   lines `name: value`][body].
// - 3: as 1, for a platform 2 (FCM) notification:
//   `{"notifications":[{"platform":2,"tokens":["<FCM token>"],<rest>}]}`.
//
// Checked (a trap on violation): never a crash; every error message is one
// line, not empty, and quotes no device token whole; the parser's value
// written back parses to the same value, and Foundation's JSONSerialization
// reads it too; a decoded request respects the limits; a mapped
// notification either goes to APNs with a payload of at most 4096 bytes
// that is a JSON object with `aps`, apns-* headers only (never
// apns-topic, always one apns-push-type), valid tokens, or fails — every
// token accounted for exactly once; a platform 2 notification's bodies are
// `{"message":{…}}` naming their token (the topic's: no token), with data
// of strings within FCM's limit, every token accounted for exactly once; a proxy notification carries only the
// five passed-on headers, a lowercase token and a JSON object body of at
// most 5120 bytes; a refusal's answer is `{"reason":…}` with its status;
// the request's `authorization` (against two stand-in token keys, one
// certificate and one API key) authorizes one of them or is 403
// MissingProviderToken, InvalidProviderToken or ExpiredProviderToken; a
// provider token read from it signs a prefix of its own text; `host`
// changes the environment only when it names an APNs host; the app's
// topics begin with the topic, a bundle id after it a proper prefix.
// Mode 2's headers and body go to every broadcast API call too
// (`checkBroadcastCalls`).
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md): there, with
// SWIFTPM_FUZZING defined, libFuzzer's main calls LLVMFuzzerTestOneInput.
// A plain `swift build` makes a replay tool of it instead:
// `provider-api-fuzzer <input file>…` runs the same checks on each file.

import APNsCore
import FCMCore
import Foundation
import FuzzSupport
import HTTPCore
import JSON
import ProviderAPI
import RelayCore

private let validToken = String(repeating: "0f", count: 32)
private let validFCMToken = "cXyz-1_2:APA91b" + String(repeating: "Q", count: 140)

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    switch input.byte() % 4 {
    case 0:
        let limits = ProviderLimits(maxBodyBytes: 256 + Int(input.byte()) * 64, maxNotifications: 1 + Int(input.byte() % 16),
                                    maxTokens: 1 + Int(input.byte() % 64))
        checkRequest(input.rest(), limits: limits)
    case 1:
        let body = Array(#"{"notifications":[{"platform":1,"tokens":[""#.utf8) + Array(validToken.utf8)
            + Array(#""],"#.utf8) + input.rest() + Array("}]}".utf8)
        checkRequest(body, limits: ProviderLimits(maxBodyBytes: 1 << 16, maxNotifications: 100, maxTokens: 1000))
    case 2:
        checkProxy(&input)
    default:
        let body = Array(#"{"notifications":[{"platform":2,"tokens":[""#.utf8) + Array(validFCMToken.utf8)
            + Array(#""],"#.utf8) + input.rest() + Array("}]}".utf8)
        checkRequest(body, limits: ProviderLimits(maxBodyBytes: 1 << 16, maxNotifications: 100, maxTokens: 1000))
    }
    return 0
}

private func checkMessage(_ message: String, _ what: String) {
    require(!message.isEmpty, "\(what): an empty message")
    require(!message.utf8.contains(UInt8(ascii: "\n")) && !message.utf8.contains(UInt8(ascii: "\r")),
            "\(what): a message of several lines: \(message)")
}

private func checkParser(_ body: [UInt8]) {
    guard let value = try? parseStrictJSON(body) else { return }
    var written: [UInt8] = []
    value.appendJSON(to: &written)
    guard let again = try? parseStrictJSON(written) else {
        require(false, "written JSON does not parse again: \(describe(written))")
        return
    }
    require(again == value, "written JSON reads back differently: \(describe(written))")
    let foundation = try? JSONSerialization.jsonObject(with: Data(written), options: [.fragmentsAllowed])
    require(foundation != nil, "Foundation cannot read the written JSON: \(describe(written))")
}

private func checkRequest(_ body: [UInt8], limits: ProviderLimits) {
    checkParser(body)
    let notifications: [ProviderNotification]
    do {
        notifications = try decodeGorushRequest(body, limits: limits)
    } catch {
        trace("refused: \(error.message)")
        checkMessage(error.message, "request error")
        require(!containsBytes(error.message, validToken), "an error quotes a token: \(error.message)")
        return
    }
    require(body.count <= limits.maxBodyBytes, "a body over the limit was decoded")
    require(!notifications.isEmpty && notifications.count <= limits.maxNotifications, "notifications over the limit")
    require(notifications.reduce(0) { $0 + $1.tokens.count } <= limits.maxTokens, "tokens over the limit")
    let logs = notifications.flatMap { checkMapping($0) }
    let response = encodeGorushResponse(counts: gorushCount(of: notifications), logs: logs)
    require((try? JSONSerialization.jsonObject(with: Data(response))) != nil, "the response is not JSON: \(describe(response))")
}

private func checkMapping(_ notification: ProviderNotification) -> [FailedPushLog] {
    if notification.platform == 2 { return checkFCMMapping(notification) }
    let mapping = mapGorushNotification(notification)
    var accounted = mapping.failures.map(\.token)
    for failure in mapping.failures {
        checkMessage(failure.error, "failure")
        require(failure.status == nil, "a failure before APNs has a status")
        require((try? parseStrictJSON(failure.json)) != nil, "a log entry is not JSON")
    }
    if let push = mapping.push {
        trace("push: \(push.tokens.count) tokens, \(push.payload.count)-byte payload")
        require(notification.platform == 1, "a push for platform \(notification.platform)")
        require(push.payload.count <= 4096, "a payload of \(push.payload.count) bytes")
        guard case .object(let members)? = try? parseStrictJSON(push.payload) else {
            require(false, "the payload is not a JSON object: \(describe(push.payload))")
            return mapping.failures
        }
        require(members.first?.name == "aps", "the payload does not start with aps")
        require((try? JSONSerialization.jsonObject(with: Data(push.payload))) != nil, "Foundation cannot read the payload")
        let names = push.headers.map(\.name)
        require(names.allSatisfy { ["apns-id", "apns-collapse-id", "apns-priority", "apns-expiration", "apns-push-type"].contains($0) },
                "an unexpected header: \(names)")
        require(names.filter { $0 == "apns-push-type" }.count == 1, "not exactly one apns-push-type: \(names)")
        require(push.headers.first { $0.name == "apns-push-type" }?.value == push.pushType,
                "a push type other than apns-push-type's: \(push.pushType)")
        if let bundle = push.bundleID {
            require(push.topic.map { $0.utf8.starts(with: bundle.utf8) && $0.utf8.count > bundle.utf8.count } == true,
                    "a bundle id that does not begin the topic: \(bundle)")
        }
        require(push.headers.allSatisfy { !$0.value.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } },
                "a header value with a control character")
        require(push.tokens.allSatisfy { $0.utf8.count >= 64 && $0.utf8.count <= 200 && $0.utf8.count % 2 == 0 },
                "a token that is not 64–200 hex digits")
        accounted += push.tokens
    }
    let expected = notification.tokens.isEmpty ? [""] : notification.tokens
    require(accounted.sorted() == expected.sorted(), "tokens not accounted for exactly once")
    return mapping.failures
}

private func checkFCMMapping(_ notification: ProviderNotification) -> [FailedPushLog] {
    let mapping = mapGorushFCMNotification(notification)
    var accounted = mapping.failures.map(\.token)
    for failure in mapping.failures {
        checkMessage(failure.error, "failure")
        require(failure.status == nil && failure.platform == "android", "a failure before FCM has a status or another platform")
        require((try? parseStrictJSON(failure.json)) != nil, "a log entry is not JSON")
    }
    func checkBody(_ body: [UInt8], token: String?) {
        guard case .object(let outer)? = try? parseStrictJSON(body), outer.count == 1, outer[0].name == "message",
              case .object(let members) = outer[0].value else {
            require(false, "an FCM body that is not {\"message\":{…}}: \(describe(body))")
            return
        }
        require(members.first { $0.name == "token" }?.value == token.map(JSONValue.string), "a body naming another token")
        if case .object(let data)? = members.first(where: { $0.name == "data" })?.value {
            require(data.allSatisfy { if case .string = $0.value { true } else { false } }, "data that is not strings")
            let size = data.reduce(0) { sum, member in
                if case .string(let text) = member.value { sum + member.name.utf8.count + text.utf8.count } else { sum }
            }
            require(size <= FCMMessageLimits.maxDataBytes, "data of \(size) bytes")
        }
        require((try? JSONSerialization.jsonObject(with: Data(body))) != nil, "Foundation cannot read the FCM body")
    }
    if let push = mapping.push {
        trace("fcm: \(push.messages.count) tokens, topic \(push.topicMessage != nil)")
        for message in push.messages {
            require(FCMToken.isValid(message.token.text.utf8), "an FCM token of the wrong syntax")
            checkBody(message.body, token: message.token.text)
        }
        if let topic = push.topicMessage {
            checkBody(topic.body, token: nil)
            accounted.append(topic.target)
        }
        accounted += push.messages.map(\.token.text)
    }
    let target = notification.fcm.condition.isEmpty ? notification.topic : notification.fcm.condition
    let expected = (target.isEmpty ? [] : [target]) + notification.tokens
    require(accounted.sorted() == (expected.isEmpty ? [""] : expected).sorted(), "FCM tokens not accounted for exactly once")
    return mapping.failures
}

private func checkProxy(_ input: inout FuzzInput) {
    let token = String(decoding: input.bytes(Int(input.byte())), as: UTF8.self)
    var headers = HTTPHeaders()
    for line in input.lengthPrefixed(limit: 2048).split(separator: UInt8(ascii: "\n")) {
        let parts = line.split(separator: UInt8(ascii: ":"), maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(decoding: parts[0], as: UTF8.self)
        let value = parts.count > 1 ? String(decoding: trimmingOWS(parts[1]), as: UTF8.self) : ""
        headers.append(name: name, value: value)
    }
    let body = input.rest()
    switch parseProxyRequest(token: token, headers: headers, body: body) {
    case .success(let notification):
        trace("proxy: passed on \(notification.headers.map(\.name))")
        require(notification.token == notification.token.lowercased(), "the token is not lowercased")
        require(notification.headers.allSatisfy {
            ["apns-id", "apns-expiration", "apns-priority", "apns-collapse-id", "apns-push-type"].contains($0.name)
        }, "a header not passed on by the proxy: \(notification.headers.map(\.name))")
        require(body.count <= 5120 && !body.isEmpty, "a body of \(body.count) bytes passed")
        guard case .object? = try? parseStrictJSON(body) else {
            require(false, "a body that is not a JSON object passed")
            return
        }
        let topics = proxyAppTopics(topic: notification.topic, pushType: headers["apns-push-type"])
        require(topics.first == notification.topic && topics.count <= 2, "the app's topics: \(topics)")
        if topics.count == 2 {
            require(notification.topic.hasPrefix(topics[1]) && topics[1].count < notification.topic.count,
                    "a bundle id that is not a prefix of its topic: \(topics)")
        }
    case .failure(let refusal):
        trace("proxy: \(refusal.status) \(refusal.reason.rawValue)")
        let answer = proxyAnswer(for: refusal, apnsID: "00000000-0000-0000-0000-000000000000")
        require(answer.status == refusal.status && refusal.status >= 400, "a refusal with status \(refusal.status)")
        require((try? parseStrictJSON(answer.body)) == .object([JSONMember(name: "reason", value: .string(refusal.reason.rawValue))]),
                "a refusal body that is not {\"reason\":…}: \(describe(answer.body))")
    }
    checkBroadcastCalls(headers: headers, body: body)
    checkProxyCaller(headers)
}

/// The same headers and body as each broadcast API call: passed on are
/// APNs' fields only (never `authorization`), a body only with a POST (a
/// create's a JSON object APNsChannelSettings reads, a broadcast's a JSON
/// object of at most 5120 bytes); a refusal's answer is `{"reason":…}`.
private func checkBroadcastCalls(headers: HTTPHeaders, body: [UInt8]) {
    let fields: Set<String> = ["apns-request-id", "apns-channel-id", "apns-push-type", "apns-priority",
                               "apns-expiration", "apns-id"]
    for (call, method) in [(APNsBroadcastCall.broadcast, "POST"), (.channels, "POST"), (.channels, "GET"),
                           (.channels, "DELETE"), (.allChannels, "GET"), (.allChannels, "PUT")] {
        switch checkBroadcastCall(call, method: method, headers: headers, body: body) {
        case .success(let checked):
            require(checked.headers.allSatisfy { fields.contains($0.name) },
                    "a field APNs does not read passed on: \(checked.headers.map(\.name))")
            require(method == "POST" || checked.body.isEmpty, "a body passed on with \(method)")
            if method == "POST" {
                require(checked.body == body, "a body changed on the way")
                require((try? parseStrictJSON(body)).map { if case .object = $0 { true } else { false } } == true,
                        "a body that is not a JSON object passed")
                if call == .broadcast { require(body.count <= 5120, "a broadcast of \(body.count) bytes passed") }
            }
        case .failure(let refusal):
            trace("broadcast \(call) \(method): \(refusal.status) \(refusal.reason)")
            let answer = broadcastAnswer(for: refusal, requestID: "r")
            require([400, 403, 405, 413].contains(answer.status), "a refusal with status \(answer.status)")
            require((try? parseStrictJSON(answer.body)) == .object([JSONMember(name: "reason", value: .string(refusal.reason))]),
                    "a refusal body that is not {\"reason\":…}: \(describe(answer.body))")
        }
    }
}

private let proxyCredentials = ProxyCredentials(
    tokenKeys: ["KEY1", "KEY2"].map { keyID in
        ProxyTokenKey(keyID: keyID, teamID: "TEAM1", name: "token \(keyID)", apps: .only([keyID])) { _, signature in
            signature == Array(keyID.utf8)
        }
    },
    certificates: [ProxyCertificate(sha256: Array(repeating: 1, count: 32), name: "certificate", apps: .only(["c"]))])
// swiftlint:disable:next force_try
private let proxyKeyring = try! APIKeyring([APIKeyEntry(name: "all", key: try! APIKey(validating: "fuzz-key-0123456789"),
                                                        apps: .all)])

/// Who the request's `authorization` and `host` say it is from.
private func checkProxyCaller(_ headers: HTTPHeaders) {
    let authorization = headers["authorization"]
    if let authorization, let token = ProviderToken(authorization: authorization) {
        require(authorization.utf8.count > token.signingInput.count, "a provider token's signing input is all of it")
    }
    let now = 1_800_000_000
    for keyring in [proxyKeyring, .empty] {
        let result = authorizeProxyRequest(authorization: authorization, clientCertificateSHA256: nil, keyring: keyring,
                                           credentials: proxyCredentials, verifier: proxyCredentials.makeVerifier(),
                                           now: now)
        switch result {
        case .success(.key(let name, _)):
            require(["all", "-", "token KEY1", "token KEY2"].contains(name), "an unknown caller \(name)")
        case .success(let other):
            require(false, "an authorization that is not a key: \(other)")
        case .failure(let refusal):
            require(refusal.status == 403 && [.missingProviderToken, .invalidProviderToken, .expiredProviderToken]
                .contains(refusal.reason), "a caller refused with \(refusal.status) \(refusal.reason.rawValue)")
        }
    }
    let host = headers["host"]
    for path in [APNsEnvironment.production, .development] {
        let environment = proxyEnvironment(host: host, path: path)
        let named = host.map { $0.lowercased().hasPrefix("api.") && $0.lowercased().contains(".push.apple.com") } ?? false
        require(environment == path || named, "host \(host ?? "-") changed the environment")
    }
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (see the top)

#if !SWIFTPM_FUZZING
@main enum ProviderAPIReplay { static func main() { replayInputFiles(tool: "provider-api-fuzzer", fuzzOne) } }
#else
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProviderAPI(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#endif
