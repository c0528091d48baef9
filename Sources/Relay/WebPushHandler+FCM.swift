import APNsCore
import Delivery
import EventLoop
import FCMCore
import HTTPCore
import Observability
import RelayCore

// The FCM URLs (`/relay-to/[<app>/]fcm/<token>[/<extra…>]`): the same steps
// as the APNs route — the app, a restricted endpoint's check, the Web Push
// request, the message, the delivery, the answer — with FCM's message and
// FCM's verdict (FCMStatusMapping.swift). Reached from one branch of the
// route switch: nothing here runs for an APNs URL.

extension WebPushHandler {
    func relayFCM(_ request: HTTP1Request, to target: FCMRelayTarget, started: UInt64,
                  completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        // A token FCM could never take: the subscription cannot work, and
        // FCM is not asked (webpush-fcm-relay's URL carries any text).
        guard let token = target.token else {
            metrics?.countFCM(app: "-", status: 400, localReason: .invalidRequest)
            output.logFCMRelay(target, app: "-", status: 400, reason: "not an FCM registration token", started: started)
            return plain(400, "not an FCM registration token (1 to \(FCMToken.maxLength) of letters, digits, -, _ and :)")
        }
        guard let app = apps.app(for: target.app) else {
            let refusal = noAppRefusal(for: target.app)
            if refusal.response.status == 503 { metrics?.countFCM(app: "-", status: 503, localReason: .unknownApp) }
            output.logFCMRelay(target, app: "-", status: refusal.response.status, reason: refusal.reason, started: started)
            return refusal.response
        }
        guard let fcm = app.fcm, let fcmDelivery else { return noFCM(for: target, app: app, started: started) }
        if let refusal = restrictionRefusal(request, keyHash: target.vapidKeyHash, app: app) {
            output.logFCMRelay(target, app: app.id, status: refusal.response.status, reason: refusal.reason,
                               started: started)
            return refusal.response
        }
        let message: WebPushMessage
        switch parseWebPush(request, maxTTL: maxTTL) {
        case .success(let parsed): message = parsed
        case .failure(let error):
            return refused(target, app: app, status: error.status, reason: error.reason, started: started)
        }
        let body: [UInt8]
        let ciphertextDropped: Bool
        do {
            (body, ciphertextDropped) = try makeFCMMessage(token: token, message: message, extra: target.extra)
        } catch {
            return refused(target, app: app, status: error.status, reason: error.reason, started: started)
        }
        if ciphertextDropped {
            log(.warning, "app=\(app.id) a body of \(message.body.count) bytes does not fit FCM's data limit once "
                + "encoded: sent without its ciphertext, the phone shows the app's notification title")
        }
        let messageID = makeAPNsID(random: &random)
        let notification = FCMNotification(account: fcm.account, token: token, body: body)
        let output = self.output
        let metrics = self.metrics
        let ttl = message.ttl
        let appID = app.id
        let account = fcm.account
        let start = fcmDelivery.deliver(notification, app: app, token: token.text, posting: .deadTokens) { delivery, _ in
            let answer = relayResponse(for: delivery.verdict, messageID: messageID, ttl: ttl)
            metrics?.countFCM(app: appID, status: answer.status, delivery: delivery, ciphertextDropped: ciphertextDropped)
            output.logFCMDelivery(target, app: appID, delivery: delivery, answer: answer, messageID: messageID,
                                  started: started, account: answer.credentialsRejected ? account : nil)
            completion(answer.http1Response)
        }
        guard case .sent = start else {
            let answer = relayResponse(for: FCMPush.overloaded.verdict, messageID: messageID, ttl: ttl)
            metrics?.countFCM(app: app.id, status: answer.status, localReason: .overloaded)
            output.logFCMRelay(target, app: app.id, status: answer.status, reason: "over MAX_IN_FLIGHT", started: started)
            return answer.http1Response
        }
        return nil
    }

    /// An app without FCM credentials, or a loop without an FCM client: the
    /// relay's configuration is at fault, never the subscription (a 4xx
    /// would make the sender delete it), so 503 with the wait of an unknown
    /// app, which a fixed apps file and a reload mend.
    private func noFCM(for target: FCMRelayTarget, app: RelayApp, started: UInt64) -> HTTP1Response {
        let reason = app.fcm == nil ? "app \(app.id) has no FCM credentials" : "this relay has no FCM client"
        metrics?.countFCM(app: app.id, status: 503, localReason: .noFCMCredentials)
        output.logFCMRelay(target, app: app.id, status: 503, reason: reason, started: started)
        var response = plain(503, reason + ": the relay's configuration, retry later")
        response.headers.append(HTTPField(name: "Retry-After", value: String(RetryAfter.unknownApp)))
        return response
    }

    private func refused(_ target: FCMRelayTarget, app: RelayApp, status: Int, reason: String,
                         started: UInt64) -> HTTP1Response {
        metrics?.countFCM(app: app.id, status: status, localReason: .invalidRequest)
        output.logFCMRelay(target, app: app.id, status: status, reason: reason, started: started)
        return plain(status, reason)
    }
}
