import Glibc
import HTTP2
import JSON

/// The FCM requests of a loop thread: the token endpoint and
/// `messages:send`, decided as `decide` decides APNs's.
extension EmulatorWorker {
    func decideFCM(_ request: HTTP2Request, fcm: FCMEmulatorState, connectionID: Int,
                   behavior: APNsEmulatorBehavior) -> Decision {
        let now = Int(time(nil))
        if fcm.tokenPaths.contains(request.path) {
            guard request.method == "POST" else {
                // RFC 6749 §3.2: "The client MUST use the HTTP POST method".
                return .respond(status: 405, headers: [("allow", "POST")], body: [])
            }
            return issueToken(request, fcm: fcm, behavior: behavior, now: now)
        }
        fcm.received.wrappingAdd(1, ordering: .relaxed)
        let validated: ValidatedFCMMessage
        switch FCMSendValidator.validate(method: request.method, path: request.path, headers: request.headers,
                                         body: request.body, grant: { fcm.issuedTokens.grant(for: $0, now: now) }) {
        case .failure(let rejection): return reject(rejection, fcm: fcm)
        case .success(let message): validated = message
        }
        if let token = validated.token, let action = FCMFaultToken.action(forToken: token[...].utf8) {
            switch action {
            case .reject(let rejection):
                return reject(rejection, fcm: fcm)
            case .unauthenticatedOnce:
                if fcm.refusedOnce.withLock({ $0.insert(token).inserted }) { return reject(.unauthenticated, fcm: fcm) }
            case .noAnswer:
                fcm.unanswered.wrappingAdd(1, ordering: .relaxed)
                return .noAnswer
            }
        }
        let name = "projects/\(validated.projectID)/messages/" + (validated.validateOnly
            ? "fake_message_id" : String(UInt64.random(in: 1...UInt64.max, using: &random)))
        var body: [UInt8] = []
        appendFCMName(name, to: &body)
        guard !validated.validateOnly else { return .respond(status: 200, headers: Self.jsonHeaders, body: body) }
        fcm.accepted.wrappingAdd(1, ordering: .relaxed)
        let observe = fcm.hasObserver.load(ordering: .acquiring)
        if fcm.configuration.recordMessages || observe {
            let record = FCMReceivedMessage(
                token: validated.token, topic: validated.topic, condition: validated.condition,
                message: validated.message, projectID: validated.projectID, name: name,
                clientEmail: validated.account.account.clientEmail, privateKeyID: validated.account.account.privateKeyID,
                accessTokenFingerprint: Self.tokenFingerprint(request.header("authorization") ?? ""),
                headers: request.headers, connectionID: connectionID, streamID: request.streamID)
            if fcm.configuration.recordMessages { fcm.records.withLock { $0.append(record) } }
            if observe, let observer = fcm.observer.withLock({ $0.call }) { observer(record) }
        }
        return .respond(status: 200, headers: Self.jsonHeaders, body: body)
    }

    private static let jsonHeaders = [(name: "content-type", value: "application/json; charset=UTF-8")]

    private func issueToken(_ request: HTTP2Request, fcm: FCMEmulatorState, behavior: APNsEmulatorBehavior,
                            now: Int) -> Decision {
        fcm.tokenRequests.wrappingAdd(1, ordering: .relaxed)
        switch FCMTokenEndpoint.validate(contentType: request.header("content-type"), body: request.body,
                                         accounts: fcm.accounts, revokedKeyIDs: behavior.fcmRevokedKeyIDs, now: now) {
        case .failure(let refusal):
            fcm.tokenRefusals.wrappingAdd(1, ordering: .relaxed)
            // One line per token request: they are rare (one an hour per
            // account), and an end-to-end test counts them in the log.
            state.log("FCM token request refused: \(refusal.refusal)")
            return .respond(status: refusal.status, headers: Self.jsonHeaders, body: refusal.body)
        case .success(let account):
            let lifetime = fcm.configuration.tokenLifetime
            let token = fcm.issuedTokens.issue(for: account, now: now, lifetime: lifetime, using: &random)
            fcm.tokensIssued.wrappingAdd(1, ordering: .relaxed)
            state.log("FCM access token issued to \(account.account) for \(lifetime) s")
            // RFC 6749 §5.1: a response with a token is not to be cached.
            return .respond(status: 200, headers: Self.jsonHeaders + [("cache-control", "no-store")],
                            body: FCMTokenEndpoint.answer(accessToken: token, lifetime: lifetime))
        }
    }

    private func reject(_ rejection: FCMRejection, fcm: FCMEmulatorState) -> Decision {
        fcm.rejected.wrappingAdd(1, ordering: .relaxed)
        var headers = Self.jsonHeaders
        if let retryAfter = rejection.retryAfter { headers.append(("retry-after", String(retryAfter))) }
        return .respond(status: rejection.status, headers: headers, body: rejection.body)
    }

    private func appendFCMName(_ name: String, to body: inout [UInt8]) {
        appendJSONObject([("name", .string(name))], to: &body)
    }
}
