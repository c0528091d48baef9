import APNsCore
import Glibc
import HTTP2

// APNs' broadcast API on the emulator's listener: Live Activity broadcasts
// (`POST /4/broadcasts/apps/<bundle id>`, which APNs serves on the
// notification host) and channel management (`/1/apps/<bundle id>/channels`,
// `/all-channels`, which APNs serves on a host of its own: the emulator
// plays both on one port, and the relay's APNS_BROADCAST_*_HOST point at
// it). Authentication as for notifications; the reasons are Apple's
// broadcast ones ("Handling error responses from APNs").
extension EmulatorWorker {
    func decideBroadcast(_ request: HTTP2Request, _ call: APNsBroadcastCall, bundleID: String,
                         credential: ClientCredential,
                         boundKey: inout EmulatorTokenKey?) -> Decision {
        let requestID = request.header("apns-request-id") ?? UUIDKey.random(using: &random).text
        func refuse(_ refusal: APNsBroadcastRefusal) -> Decision {
            .respond(status: refusal.status, headers: [("apns-request-id", requestID), ("content-type", "application/json")],
                     body: refusal.body)
        }
        guard call.methods.contains(request.method) else { return refuse(APNsBroadcastRefusal(.methodNotAllowed)) }
        let authenticatedAs: String?
        switch authenticate(request, bundleID: bundleID, credential: credential, boundKey: &boundKey) {
        case .failure(let refusal): return refuse(refusal)
        case .success(let who): authenticatedAs = who
        }
        // Apple: "Ensure that no push type suffix is added to the bundle ID."
        guard !bundleID.hasSuffix(".push-type.liveactivity") else { return refuse(APNsBroadcastRefusal(.topicDisallowed)) }
        let header = { (name: String) in request.header(name) }
        let channels = state.channels
        let answered = [("apns-request-id", requestID)]
        switch (call, request.method) {
        case (.broadcast, _):
            if let refusal = APNsBroadcastChecks.broadcast(header: header, body: request.body) { return refuse(refusal) }
            let channelID = request.header("apns-channel-id") ?? ""
            guard let settings = channels.settings(bundleID: bundleID, id: channelID) else {
                return refuse(APNsBroadcastRefusal(.channelNotRegistered))
            }
            // Apple: a No Messages Stored channel takes only expiration 0.
            if settings.messageStoragePolicy == 0, let expiration = request.header("apns-expiration"),
               APNsBroadcastChecks.expirationSeconds(expiration) != 0 {
                return refuse(APNsBroadcastRefusal(.badExpirationDate))
            }
            recordBroadcast(ReceivedBroadcast(
                bundleID: bundleID, channelID: channelID,
                headers: request.headers.map { .init(name: $0.name, value: $0.value) }, payload: request.body,
                requestID: requestID, authenticatedAs: authenticatedAs))
            let apnsID = request.header("apns-id") ?? UUIDKey.random(using: &random).text
            return .respond(status: 200, headers: answered + [("apns-id", apnsID)], body: [])
        case (.channels, "POST"):
            let settings: APNsChannelSettings
            do { settings = try APNsChannelSettings(body: request.body) } catch { return refuse(error) }
            guard let id = channels.create(bundleID: bundleID, settings: settings, id: newChannelID()) else {
                return refuse(APNsBroadcastRefusal(.cannotCreateChannelConfig))
            }
            return .respond(status: 201, headers: answered + [("apns-channel-id", id)], body: [])
        case (.channels, let method):
            if let refusal = APNsBroadcastChecks.channelID(header: header) { return refuse(refusal) }
            let id = request.header("apns-channel-id") ?? ""
            if method == "DELETE" {
                guard channels.delete(bundleID: bundleID, id: id) else {
                    return refuse(APNsBroadcastRefusal(.channelNotRegistered))
                }
                return .respond(status: 204, headers: answered, body: [])
            }
            guard let settings = channels.settings(bundleID: bundleID, id: id) else {
                return refuse(APNsBroadcastRefusal(.channelNotRegistered))
            }
            return .respond(status: 200, headers: answered + [("content-type", "application/json")], body: settings.json)
        case (.allChannels, _):
            let ids = channels.ids(bundleID: bundleID).map { "\"\($0)\"" }.joined(separator: ",")
            return .respond(status: 200, headers: answered + [("content-type", "application/json")],
                            body: Array("{\"channels\":[\(ids)]}".utf8))
        }
    }

    /// The request's credential as APNs checks it for a broadcast API call:
    /// who it is, or the refusal. A certificate or a key that does not
    /// cover the bundle id: 403 TopicMismatch.
    private func authenticate(_ request: HTTP2Request, bundleID: String, credential: ClientCredential,
                              boundKey: inout EmulatorTokenKey?)
        -> Result<String?, APNsBroadcastRefusal> {
        switch credential {
        case .certificate(let uid):
            if let uid, uid != bundleID { return .failure(APNsBroadcastRefusal(.topicMismatch)) }
            return .success(uid)
        case .token(let verifier):
            guard let authorization = request.header("authorization") else {
                return .failure(APNsBroadcastRefusal(.missingProviderToken))
            }
            switch verifier.verify(authorization: authorization, now: Int(time(nil))) {
            case .failure(let refusal):
                let rejection = APNsRejection(refusal.reason)
                return .failure(APNsBroadcastRefusal(status: rejection.status, reason: rejection.reason.rawValue))
            case .success(let verified):
                if let boundKey, boundKey !== verified.key {
                    return .failure(APNsBroadcastRefusal(.unrelatedKeyIdInToken))
                }
                guard verified.key.covers(topic: bundleID) else { return .failure(APNsBroadcastRefusal(.topicMismatch)) }
                if boundKey == nil { boundKey = verified.key }
                return .success(verified.key.teamID)
            }
        case .none:
            return .success(nil)
        case .absent:
            return .failure(APNsBroadcastRefusal(.missingProviderToken))
        }
    }

    /// 16 random bytes in standard base64, as APNs' channel ids are.
    private func newChannelID() -> String {
        let bytes = (0..<2).flatMap { _ in withUnsafeBytes(of: random.next() as UInt64) { Array($0) } }
        let digits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var text: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = 0
            for byte in chunk { value = value << 8 | Int(byte) }
            value <<= 8 * (3 - chunk.count)
            for position in 0..<(chunk.count + 1) { text.append(digits[(value >> (18 - 6 * position)) & 63]) }
            index += 3
        }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        return String(decoding: text, as: UTF8.self)
    }

    private func recordBroadcast(_ broadcast: ReceivedBroadcast) {
        if state.configuration.recordNotifications { state.broadcasts.withLock { $0.append(broadcast) } }
        if let observer = state.broadcastObserver.withLock({ $0.call }) { observer(broadcast) }
    }
}
