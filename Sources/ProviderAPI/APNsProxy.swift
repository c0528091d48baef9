// The APNs-shaped proxy endpoint, `POST /3/device/<token>`:
// Apple's own request over HTTP/1.1 in, the notification to send or APNs'
// refusal out; and the answer, written as APNs writes it. The rules are
// Apple's "Sending notification requests to APNs" (the header table) and
// "Handling notification responses from APNs" (the reasons); a request
// APNs would refuse is refused here, without a round trip.

import APNsCore
import HTTPCore
import JSON
import RelayCore

/// A request the proxy passes on to APNs.
public struct ProxyNotification: Sendable, Equatable {
    /// The device token, lowercased (WIRE.md §1.1).
    public var token: String
    /// `apns-topic`: the caller picks the app by it.
    public var topic: String
    /// The request's `apns-id`, `apns-expiration`, `apns-priority`,
    /// `apns-collapse-id` and `apns-push-type`, those it has, in that
    /// order, lowercase; nothing else (never `authorization`: the relay
    /// sends with its own credentials).
    public var headers: [HTTPField]
    public var payload: [UInt8]
}

/// APNs' refusal: its status and reason.
public struct APNsProxyRefusal: Error, Sendable, Equatable {
    public var status: Int
    public var reason: APNsReason

    public init(_ reason: APNsReason) {
        self.status = reason.documentedStatus ?? 400
        self.reason = reason
    }

    /// A body that is not a JSON object. Apple's table has no reason for
    /// it, so this is the emulator's undocumented `BadPayload` (APNsEmulator's
    /// `APNsRejection.badPayload`): a client maps it as "400, any other
    /// reason".
    public static let badPayload = APNsProxyRefusal(status: 400, reason: .unknown("BadPayload"))

    init(status: Int, reason: APNsReason) {
        self.status = status
        self.reason = reason
    }
}

/// Checks a proxy request as APNs would and takes out what is passed on.
/// In order: the token (empty: MissingDeviceToken; not hex:
/// BadDeviceToken), a repeated apns-* header (DuplicateHeaders),
/// `apns-topic` (absent: MissingTopic — the relay needs it to pick the
/// app; not a bundle id: BadTopic), `apns-priority` (10, 5 or 1:
/// BadPriority), `apns-expiration` (decimal seconds: BadExpirationDate),
/// `apns-collapse-id` (at most 64 bytes: BadCollapseId), `apns-id` (a
/// canonical UUID: BadMessageId), `apns-push-type` (Apple's list:
/// InvalidPushType), the body (empty: PayloadEmpty; over 4096 bytes, 5120
/// for voip: PayloadTooLarge, 413; not a JSON object: 400 BadPayload).
public func parseProxyRequest(token: String, headers: HTTPHeaders, body: [UInt8])
    -> Result<ProxyNotification, APNsProxyRefusal> {
    guard !token.isEmpty else { return .failure(APNsProxyRefusal(.missingDeviceToken)) }
    guard let normalizedToken = deviceToken(fromHex: token) else { return .failure(APNsProxyRefusal(.badDeviceToken)) }

    let passedOn = ["apns-id", "apns-expiration", "apns-priority", "apns-collapse-id", "apns-push-type"]
    for name in passedOn + ["apns-topic"] where headers.count(of: name) > 1 {
        return .failure(APNsProxyRefusal(.duplicateHeaders))
    }
    guard let topic = headers["apns-topic"] else { return .failure(APNsProxyRefusal(.missingTopic)) }
    guard !topic.isEmpty, topic.utf8.count <= 255, topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        return .failure(APNsProxyRefusal(.badTopic))
    }
    if let priority = headers["apns-priority"], !["10", "5", "1"].contains(priority) {
        return .failure(APNsProxyRefusal(.badPriority))
    }
    if let expiration = headers["apns-expiration"], !isDecimalSeconds(expiration) {
        return .failure(APNsProxyRefusal(.badExpirationDate))
    }
    if let collapseID = headers["apns-collapse-id"], collapseID.utf8.count > 64 {
        return .failure(APNsProxyRefusal(.badCollapseId))
    }
    if let apnsID = headers["apns-id"], !isCanonicalUUID(apnsID) {
        return .failure(APNsProxyRefusal(.badMessageId))
    }
    let pushType = headers["apns-push-type"]
    if let pushType, !apnsPushTypes.contains(pushType) {
        return .failure(APNsProxyRefusal(.invalidPushType))
    }
    guard !body.isEmpty else { return .failure(APNsProxyRefusal(.payloadEmpty)) }
    // Apple: 4 KB for a notification, 5 KB for a VoIP one.
    guard body.count <= (pushType == "voip" ? 5120 : apnsMaxPayloadBytes) else {
        return .failure(APNsProxyRefusal(.payloadTooLarge))
    }
    guard case .object? = try? parseStrictJSON(body) else { return .failure(.badPayload) }

    var fields: [HTTPField] = []
    for name in passedOn {
        if let value = headers[name] { fields.append(HTTPField(name: name, value: value)) }
    }
    return .success(ProxyNotification(token: normalizedToken, topic: topic, headers: fields, payload: body))
}

/// The environment of a proxy request: the one the `host` field (HTTP/2's
/// `:authority` arrives as `host`) names when it is an APNs host, a port
/// allowed (`api.sandbox.push.apple.com`, `api.development.push.apple.com`:
/// the sandbox; `api.push.apple.com`: production), so an APNs library
/// pointed at the relay by name keeps its environment; else the path's
/// (`/development/3/…` the sandbox, `/3/…` production).
public func proxyEnvironment(host: String?, path: APNsEnvironment) -> APNsEnvironment {
    guard let host else { return path }
    var name = Substring(host)
    if let colon = name.lastIndex(of: ":"), name[name.index(after: colon)...].allSatisfy(\.isNumber) {
        name = name[..<colon]
    }
    switch name.lowercased() {
    case "api.push.apple.com": return .production
    case "api.sandbox.push.apple.com", "api.development.push.apple.com": return .development
    default: return path
    }
}

/// The topics that may name the app of a proxy request, in order: the
/// `apns-topic` itself, then the bundle id it carries with the suffix of
/// its push type (`com.example.app.voip` for `voip`, …; `apnsBundleID`;
/// without `apns-push-type`, any push type's). APNs is sent the topic as the
/// client wrote it.
public func proxyAppTopics(topic: String, pushType: String?) -> [String] {
    guard let bundleID = apnsBundleID(ofTopic: topic),
          pushType.map({ apnsTopic(appTopic: bundleID, pushType: $0) == topic }) ?? true else { return [topic] }
    return [topic, bundleID]
}

/// UNIX seconds: 1 to 18 decimal digits (0: deliver once, store nothing).
private func isDecimalSeconds(_ text: String) -> Bool {
    (1...18).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
}

/// 8-4-4-4-12 hex digits, either case (RFC 9562 §4).
private func isCanonicalUUID(_ text: String) -> Bool {
    let groups = text.split(separator: "-", omittingEmptySubsequences: false)
    return groups.map(\.utf8.count) == [8, 4, 4, 4, 12]
        && groups.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 && Character(Unicode.Scalar($0)).isHexDigit } }
}

/// The proxy's answer, as APNs writes its own: the status, `apns-id`, and
/// for a refusal the JSON body `{"reason":"…"}` (with `"timestamp"`, APNs'
/// milliseconds, for 410); 200 has no body.
public struct APNsProxyAnswer: Sendable, Equatable {
    public var status: Int
    public var headers: [HTTPField]
    public var body: [UInt8]
}

/// The `apns-id` of the answer: the client's when it sent a well-formed
/// one (APNs echoes it), else `generated`.
public func proxyAnswerID(headers: HTTPHeaders, generated: String) -> String {
    guard headers.count(of: "apns-id") == 1, let sent = headers["apns-id"], isCanonicalUUID(sent) else { return generated }
    return sent
}

/// The answer for a request the proxy refused itself.
public func proxyAnswer(for refusal: APNsProxyRefusal, apnsID: String) -> APNsProxyAnswer {
    APNsProxyAnswer(status: refusal.status, headers: [HTTPField(name: "apns-id", value: apnsID)],
                    body: apnsReasonBody(refusal.reason, timestamp: nil))
}

/// The answer for a delivery: APNs' own status, reason, `apns-id` (the
/// one APNs returned, else the one sent), `apns-unique-id` (when APNs sent
/// one: its development environment does, on every answer) and
/// `retry-after` (when APNs' error answer had one, `retryAfterSeconds`)
/// when APNs answered; for what APNs
/// never says (no answer in time, no connection, TLS or stream failures,
/// the relay overloaded) 503 `ServiceUnavailable` with `Retry-After`
/// (RelayCore's `RetryAfter`), as APNs itself asks a client to come back.
public func proxyAnswer(for outcome: DeliveryOutcome, apnsID: String, uniqueID: String? = nil,
                        timestamp: Int64? = nil, retryAfterSeconds: Int? = nil) -> APNsProxyAnswer {
    let retryAfter: Int
    switch outcome {
    case .apns(let status, let reason, let returnedID):
        var headers = [HTTPField(name: "apns-id", value: returnedID ?? apnsID)]
        if let uniqueID { headers.append(HTTPField(name: "apns-unique-id", value: uniqueID)) }
        if status == 200 { return APNsProxyAnswer(status: 200, headers: headers, body: []) }
        if let retryAfterSeconds { headers.append(HTTPField(name: "retry-after", value: String(retryAfterSeconds))) }
        let body = reason.map { apnsReasonBody($0, timestamp: status == 410 ? timestamp : nil) } ?? []
        return APNsProxyAnswer(status: status, headers: headers, body: body)
    case .allConnectionsDown: retryAfter = RetryAfter.allConnectionsDown
    case .overloaded: retryAfter = RetryAfter.overloaded
    case .answerTimedOut, .connectFailed, .tlsFailed, .streamFailed: retryAfter = RetryAfter.apnsUnavailable
    }
    return APNsProxyAnswer(status: 503, headers: [HTTPField(name: "apns-id", value: apnsID),
                                                  HTTPField(name: "retry-after", value: String(retryAfter))],
                           body: apnsReasonBody(.serviceUnavailable, timestamp: nil))
}

/// `{"reason":"BadDeviceToken"}`, `{"reason":"Unregistered","timestamp":…}`.
private func apnsReasonBody(_ reason: APNsReason, timestamp: Int64?) -> [UInt8] {
    var members: [(String, JSONValue)] = [("reason", .string(reason.rawValue))]
    if let timestamp { members.append(("timestamp", .number(String(timestamp)))) }
    var output: [UInt8] = []
    appendJSONObject(members, to: &output)
    return output
}
