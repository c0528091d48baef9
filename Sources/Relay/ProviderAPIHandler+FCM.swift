import Delivery
import FCMCore
import ProviderAPI
import RelayCore

// gorush's `/api/push` for Android tokens (`"platform": 2`): each
// notification mapped as gorush v1.22.0's FCM path builds its messages
// (ProviderAPI's `mapGorushFCMNotification`), sent with its app's service
// account through the loop's FCM path, and answered with gorush's logs
// (platform `android`). Reached from the one platform test of the accept
// step: nothing here runs for an iOS token.

/// The app and failed-push source a request's sends of one notification
/// share (each send holds its index).
typealias PushGroup = (app: RelayApp, source: FailedPushSource)

/// One FCM message of an `/api/push` request and the index of its group.
typealias FCMSend = (notification: FCMNotification, group: Int)

extension ProviderAPIHandler {
    /// Why a topic or condition message is not sent: `FCMNotification`
    /// carries a registration token (its feedback entry's key), which a
    /// topic or a condition is not.
    static let topicRefusal = "topic and condition messages are not served: this relay sends to registration tokens"

    /// Accepts one platform 2 notification: its messages into `sends`
    /// (sent with the app named by `app`, else the default app), the
    /// failures before FCM into `failures`, in gorush's order (the topic's
    /// first, then the tokens'). Returns the app the request's key may not
    /// send for (the whole request is then refused), else nil.
    func acceptFCM(_ notification: ProviderNotification, _ call: APICall, sends: inout [FCMSend],
                   groups: inout [PushGroup], failures: inout [FailedPushLog]) -> String? {
        let mapping = mapGorushFCMNotification(notification)
        failures.append(contentsOf: mapping.failures)
        guard let push = mapping.push else { return nil }
        func failAll(_ why: String, app: String?) {
            let targets = (push.topicMessage.map { [$0.target] } ?? []) + push.messages.map(\.token.text)
            failures.append(contentsOf: targets.map {
                FailedPushLog(notification: notification, token: $0, app: app, failure: why)
            })
        }
        guard let app = fcmApp(named: push.app) else {
            failAll(push.app.map { "no app \($0)" } ?? "no default app", app: push.app)
            return nil
        }
        guard call.authorization.allows(app: app.id) else { return app.id }
        guard let credentials = app.fcm, fcmDelivery != nil else {
            // As an iOS token for an app without the environment's
            // credential: the relay's configuration, said per token.
            failAll(app.fcm == nil ? "app \(app.id) has no FCM credentials" : "this relay has no FCM client",
                    app: app.id)
            return nil
        }
        if let topic = push.topicMessage {
            failures.append(FailedPushLog(notification: notification, token: topic.target, app: app.id,
                                          failure: Self.topicRefusal))
        }
        guard !push.messages.isEmpty else { return nil }
        groups.append((app, FailedPushSource(notification: .init(notification))))
        for message in push.messages {
            sends.append((FCMNotification(account: credentials.account, token: message.token, body: message.body),
                          groups.count - 1))
        }
        return nil
    }

    /// The app a platform 2 notification is sent with: the one its `app`
    /// names, else the default app; nil when there is no such app.
    func fcmApp(named id: String?) -> RelayApp? {
        id.map { app(id: $0) } ?? apps.defaultApp
    }

    /// Whether the relay sends a platform 2 notification to FCM: its app has
    /// FCM credentials and the loop an FCM client. gorush counts the tokens
    /// of the platforms it has enabled; this is the relay's "Android
    /// enabled", per app.
    func sendsFCM(_ notification: ProviderNotification) -> Bool {
        fcmDelivery != nil && fcmApp(named: notification.app)?.fcm != nil
    }

    /// Sends every FCM message of a synchronous request, each token's end
    /// into `batch` (its failed-push log, as the hook hears it too).
    func deliverFCM(_ sends: [FCMSend], groups: [PushGroup], into batch: DeliveryBatch<FailedPushLog>) {
        guard let fcmDelivery else { return }
        let metrics = self.metrics
        for (notification, group) in sends {
            let appID = groups[group].app.id
            let start = fcmDelivery.deliver(notification, app: groups[group].app, token: notification.token.text,
                                            posting: .everyFailure(groups[group].source)) { delivery, log in
                metrics?.countNotification(app: appID, fcm: delivery.outcome)
                batch.complete(log)
            }
            switch start {
            case .sent: batch.begin()
            case .overloaded(let log):
                metrics?.countNotification(app: appID, fcm: .overloaded)
                if let log { batch.record(log) }
            }
        }
    }
}
