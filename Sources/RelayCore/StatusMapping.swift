// WIRE.md §3: what the relay tells a Web Push sender for each APNs or
// local outcome. Senders delete a subscription on 4xx answers — Mastodon on
// any 4xx but 408 and 429, Pleroma and Akkoma on any 4xx at all, GoToSocial
// on any but 408, 413 and 429, Misskey on 410 (the sender table in
// WIRE.md §3.1) — so a 4xx means only "this subscription can never
// work" (APNs said the token is dead) or "the request itself is malformed";
// everything transient, or the relay's own fault, is a 5xx, with
// `Retry-After` where a wait helps.

import APNsCore
import HTTPCore

/// The answer to a relay request.
public struct RelayResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [HTTPField]
    /// One line naming the reason, ending in a newline; empty for 201.
    public var body: String
    /// APNs refused our credentials (403): the health check turns 503 and
    /// this is logged as an error.
    public var credentialsRejected: Bool

    public init(status: Int, headers: [HTTPField] = [], body: String = "", credentialsRejected: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.credentialsRejected = credentialsRejected
    }

    /// The same as an HTTP/1 response to serialize.
    public var http1Response: HTTP1Response {
        HTTP1Response(status: status, headers: headers, body: body)
    }
}

/// `Retry-After` seconds (RFC 9110 §10.2.3). Mastodon retries failed
/// deliveries with its own backoff; these are hints for senders that read them.
public enum RetryAfter {
    /// APNs throttles this device (429 TooManyRequests).
    public static let deviceThrottled = 60
    /// APNs throttles our token updates: our fault, transient.
    public static let providerTokenThrottled = 60
    /// APNs 500/503, or any other transient APNs failure.
    public static let apnsUnavailable = 10
    /// Every APNs connection of the environment is down.
    public static let allConnectionsDown = 5
    /// The relay is over its in-flight limit (WIRE.md §3).
    public static let overloaded = 1
    /// A URL names an app the relay does not have (or there is no default
    /// app): the operator's apps file is wrong, which a fix and a reload
    /// mend in minutes.
    public static let unknownApp = 300
    /// A restricted endpoint's JWT is signed by the right key but names
    /// another origin, or an `exp` outside the relay's clock: a replay, or
    /// the relay's origin or clock is wrong, which a fix mends (a 503, not a
    /// 4xx, so that the sender keeps the subscription).
    public static let vapidUnverifiable = 60
}

/// Maps a delivery outcome to the relay's answer (WIRE.md §3).
///
/// - Parameters:
///   - apnsID: the apns-id the relay sent; used for `Location` when APNs did
///     not echo one.
///   - ttl: the TTL used, echoed in `TTL` on 201 (RFC 8030 §5.2).
///   - apnsRetryAfter: the `Retry-After` of APNs' answer, in seconds: an
///     answer that has a `Retry-After` says the longer of it and the
///     relay's own (a sender that honours it, as GoToSocial does, then
///     waits as long as APNs asked).
public func relayResponse(for outcome: DeliveryOutcome, notification apnsID: String, ttl: Int,
                          apnsRetryAfter: Int? = nil) -> RelayResponse {
    if outcome.credentialVerdict == .rejected, case .apns(_, let reason, _) = outcome {
        let named = reason.map { " (\($0.rawValue))" } ?? ""
        return RelayResponse(
            status: 502, headers: textPlainHeaders, body: line("APNs rejected the relay's credentials" + named),
            credentialsRejected: true)
    }
    switch outcome {
    case .apns(let status, let reason, let returnedID):
        return relayResponse(apnsStatus: status, reason: reason, apnsID: returnedID ?? apnsID, ttl: ttl,
                             apnsRetryAfter: apnsRetryAfter)
    case .answerTimedOut:
        return failure(504, "APNs did not answer in time")
    case .connectFailed(let detail):
        return failure(502, "cannot connect to APNs: \(detail)")
    case .tlsFailed(let detail):
        return failure(502, "TLS with APNs failed: \(detail)")
    case .streamFailed(let detail):
        return failure(502, "APNs stream failed: \(detail)")
    case .allConnectionsDown:
        return failure(503, "no APNs connection is up", retryAfter: RetryAfter.allConnectionsDown)
    case .overloaded:
        return failure(503, "relay overloaded, retry", retryAfter: RetryAfter.overloaded)
    }
}

private func relayResponse(apnsStatus: Int, reason: APNsReason?, apnsID: String, ttl: Int,
                           apnsRetryAfter: Int?) -> RelayResponse {
    let named = reason.map { " (\($0.rawValue))" } ?? ""
    /// The relay's own wait, or APNs' when that is longer.
    func wait(_ own: Int) -> Int { max(own, apnsRetryAfter ?? 0) }
    switch apnsStatus {
    case 200:
        return created(messageID: apnsID, ttl: ttl)
    case 410:
        return failure(410, "device token no longer active" + named)
    case 400 where reason == .badDeviceToken || reason == .deviceTokenNotForTopic:
        // The token can never work for this app and environment.
        return failure(410, "device token rejected by APNs" + named)
    case 400:
        return failure(502, "APNs refused the relay's request" + named)
    case 404, 405:
        return failure(502, "APNs refused the relay's request" + named)
    case 413:
        // The relay sized the payload to fit (a Web Push body that would not
        // fit goes without its ciphertext): APNs measuring otherwise is the
        // relay's fault, never the subscription's.
        return failure(502, "APNs refused the payload's size" + named)
    case 429 where reason == .tooManyProviderTokenUpdates:
        // Our JWT refreshes are throttled: not this device's fault.
        return failure(503, "APNs throttles the relay's token updates" + named,
                       retryAfter: wait(RetryAfter.providerTokenThrottled))
    case 429:
        // A throttled device is transient: Pleroma and Akkoma delete a
        // subscription on any 4xx, 429 included.
        return failure(503, "APNs throttles this device" + named, retryAfter: wait(RetryAfter.deviceThrottled))
    case 500, 503:
        return failure(503, "APNs unavailable" + named, retryAfter: wait(RetryAfter.apnsUnavailable))
    default:
        // Anything else (another 2xx, 3xx, a proxy's 502…) is not a success
        // and not a verdict on the subscription.
        return failure(502, "unexpected APNs status " + decimalText(apnsStatus) + named)
    }
}

/// 201 with the message's `Location` and the `TTL` used (RFC 8030 §5.2),
/// whichever service took it.
@inline(__always)
func created(messageID: String, ttl: Int) -> RelayResponse {
    RelayResponse(status: 201, headers: [
        HTTPField(name: "Location", value: "/relay-to/message/" + messageID),
        HTTPField(name: "TTL", value: decimalText(ttl)),
    ])
}

/// The text as one line (details from lower layers could carry line breaks
/// or control characters), newline-terminated.
func line(_ text: String) -> String {
    String(decoding: text.utf8.map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: " ") : $0 }, as: UTF8.self) + "\n"
}

func failure(_ status: Int, _ reason: String, retryAfter: Int? = nil) -> RelayResponse {
    var headers = textPlainHeaders
    if let retryAfter {
        headers.append(HTTPField(name: "Retry-After", value: decimalText(retryAfter)))
    }
    return RelayResponse(status: status, headers: headers, body: line(reason))
}
