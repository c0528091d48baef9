// APNs' broadcast API at the provider API (`/4/broadcasts/apps/<bundle id>`,
// `/1/apps/<bundle id>/channels`, `/1/apps/<bundle id>/all-channels`): the
// caller's request checked by APNs' rules (APNsCore's `APNsBroadcastChecks`)
// and the fields passed on; APNs' answer, or the relay's own refusal,
// written as APNs writes it.

import APNsCore
import HTTPCore
import RelayCore

/// A broadcast API call the relay passes on: the caller's apns-* fields
/// APNs reads for it (never `authorization`) and the body.
public struct CheckedBroadcastCall: Sendable, Equatable {
    public var headers: [HTTPField]
    public var body: [UInt8]
}

/// Checks a call as APNs would: the method (405 MethodNotAllowed), then a
/// broadcast's headers and payload, a create's body, a read's or a
/// delete's `apns-channel-id`. The fields passed on: `apns-request-id`
/// (APNs echoes it, or makes one) and those the call uses.
public func checkBroadcastCall(_ call: APNsBroadcastCall, method: String, headers: HTTPHeaders, body: [UInt8])
    -> Result<CheckedBroadcastCall, APNsBroadcastRefusal> {
    guard call.methods.contains(method) else { return .failure(APNsBroadcastRefusal(.methodNotAllowed)) }
    let header = { (name: String) in headers[name] }
    var passedOn = ["apns-request-id"]
    var forwardedBody: [UInt8] = []
    switch (call, method) {
    case (.broadcast, _):
        if let refusal = APNsBroadcastChecks.broadcast(header: header, body: body) { return .failure(refusal) }
        passedOn += ["apns-channel-id", "apns-push-type", "apns-priority", "apns-expiration", "apns-id"]
        forwardedBody = body
    case (.channels, "POST"):
        do { _ = try APNsChannelSettings(body: body) } catch { return .failure(error) }
        forwardedBody = body
    case (.channels, _):
        if let refusal = APNsBroadcastChecks.channelID(header: header) { return .failure(refusal) }
        passedOn.append("apns-channel-id")
    case (.allChannels, _):
        break
    }
    let fields = passedOn.compactMap { name in headers[name].map { HTTPField(name: name, value: $0) } }
    return .success(CheckedBroadcastCall(headers: fields, body: forwardedBody))
}

/// The answer to a broadcast API call: APNs' status, the fields it sent
/// back (`APNsBroadcastAnswer.passedBackFields`) and its body, as they
/// came; without an answer from APNs, 503 ServiceUnavailable with
/// `Retry-After`, as the proxy answers (`proxyAnswer(for:apnsID:)`).
/// `requestID`: the caller's `apns-request-id`, or the relay's for it.
public func broadcastAnswer(for answer: APNsBroadcastAnswer, requestID: String) -> APNsProxyAnswer {
    switch answer {
    case .answered(let status, let headers, let body):
        return APNsProxyAnswer(status: status, headers: headers, body: body)
    case .failed(let outcome):
        var unanswered = proxyAnswer(for: outcome, apnsID: requestID)
        unanswered.headers = unanswered.headers.map {
            $0.name == "apns-id" ? HTTPField(name: "apns-request-id", value: requestID) : $0
        }
        return unanswered
    }
}

/// The relay's own refusal of a broadcast API call, as APNs writes one.
public func broadcastAnswer(for refusal: APNsBroadcastRefusal, requestID: String) -> APNsProxyAnswer {
    APNsProxyAnswer(status: refusal.status, headers: [HTTPField(name: "apns-request-id", value: requestID)],
                    body: refusal.body)
}
