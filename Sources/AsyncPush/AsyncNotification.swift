import APNsCore
import FCMCore
import HTTPCore
import RelayCore

/// One notification an asynchronous `/api/push` accepted, from the 200 to
/// its end: what any instance needs to send it and to word its failed-push
/// log, by value, naming its app by id. The in-process queue holds it as it
/// is; a fleet's queue holds its stream fields (`fields`,
/// AsyncNotification+Fields.swift), read back defensively
/// (`init(fields:)`): another instance, an older version or anyone who can
/// write to Redis may have written the entry. The consuming instance looks
/// the app up in its own apps when it delivers, and takes the app's
/// credentials of the notification's service there.
public struct AsyncNotification: Sendable, Equatable {
    public var appID: String
    /// As the sender wrote it (the failed-push log's).
    public var token: String
    /// What goes to the push service, in that service's form.
    public var message: Message
    /// The gorush notification's `notif_id`, platform and message: what its
    /// failed-push log names. Nil: the log has none (message empty).
    public var source: FailedPushSource.Notification?
    /// When the request was answered 200, milliseconds since the epoch.
    public var acceptedAt: Int64
    /// Tries made (0: none yet).
    public var tries: Int
    /// Where a fleet's queue holds it (the stream entry's id), to
    /// acknowledge when done; nil in the in-process queue. Not a stream
    /// field: the entry's id is the stream's.
    public var receipt: String?

    /// The notification in its push service's form.
    public enum Message: Sendable, Equatable {
        /// An iOS token's (gorush platform 1).
        case apns(APNsMessage)
        /// An Android token's (gorush platform 2).
        case fcm(FCMMessage)
    }

    /// APNs' request without the app's parts (its credential, its topic).
    public struct APNsMessage: Sendable, Equatable {
        public var environment: APNsEnvironment
        /// APNs' form (the request path's, the feedback list's).
        public var deviceToken: String
        /// The APNs headers without `apns-topic` (the app supplies it, as
        /// for any route).
        public var headers: [HTTPField]
        public var payload: [UInt8]
        public var apnsID: String

        public init(environment: APNsEnvironment, deviceToken: String, headers: [HTTPField], payload: [UInt8],
                    apnsID: String) {
            (self.environment, self.deviceToken) = (environment, deviceToken)
            (self.headers, self.payload, self.apnsID) = (headers.filter { $0.name != "apns-topic" }, payload, apnsID)
        }

        /// The app's topic with the suffix the push type needs.
        func topic(for app: RelayApp) -> String {
            apnsTopic(appTopic: app.topic, pushType: headers.first { $0.name == "apns-push-type" }?.value ?? "")
        }

        /// APNs' request for `app`; nil when that app does not serve the
        /// environment.
        public func request(for app: RelayApp) -> APNsNotification? {
            guard let credential = app.credential(for: environment) else { return nil }
            return APNsNotification(to: deviceToken, environment: environment, credential: credential,
                                    headers: APNsRequestHeaders(topic: topic(for: app), headers), payload: payload,
                                    apnsID: apnsID, ttl: 0)
        }
    }

    /// FCM's request without the app's part (its service account).
    public struct FCMMessage: Sendable, Equatable {
        public var token: FCMToken
        /// `{"message":{…,"token":"<token>"}}`, as the accept path built it.
        public var body: [UInt8]

        public init(token: FCMToken, body: [UInt8]) {
            (self.token, self.body) = (token, body)
        }

        /// FCM's request for `app`; nil when that app has no FCM credentials.
        public func request(for app: RelayApp) -> FCMNotification? {
            app.fcm.map { FCMNotification(account: $0.account, token: token, body: body) }
        }
    }

    public init(appID: String, token: String, message: Message, source: FailedPushSource.Notification?,
                acceptedAt: Int64, tries: Int = 0) {
        (self.appID, self.token, self.message, self.source) = (appID, token, message, source)
        (self.acceptedAt, self.tries) = (acceptedAt, tries)
    }

    /// An iOS token's notification.
    public init(appID: String, environment: APNsEnvironment, token: String, deviceToken: String,
                headers: [HTTPField], payload: [UInt8], apnsID: String, source: FailedPushSource.Notification?,
                acceptedAt: Int64, tries: Int = 0) {
        self.init(appID: appID, token: token,
                  message: .apns(APNsMessage(environment: environment, deviceToken: deviceToken, headers: headers,
                                             payload: payload, apnsID: apnsID)),
                  source: source, acceptedAt: acceptedAt, tries: tries)
    }

    /// The asynchronous form of an APNs notification the accept path built for `appID`.
    public init(_ notification: APNsNotification, appID: String, token: String,
                source: FailedPushSource.Notification?, acceptedAt: Int64) {
        self.init(appID: appID, environment: notification.environment, token: token,
                  deviceToken: notification.deviceToken, headers: notification.headers, payload: notification.payload,
                  apnsID: notification.apnsID, source: source, acceptedAt: acceptedAt)
    }

    /// The asynchronous form of an FCM notification the accept path built
    /// for `appID` (the token as the sender wrote it is FCM's: its syntax
    /// was checked, nothing rewritten).
    public init(_ notification: FCMNotification, appID: String, source: FailedPushSource.Notification?,
                acceptedAt: Int64) {
        self.init(appID: appID, token: notification.token.text,
                  message: .fcm(FCMMessage(token: notification.token, body: notification.body)),
                  source: source, acceptedAt: acceptedAt)
    }

    /// APNs' request for `app`, as the delivering instance knows it; nil
    /// when that app does not serve the environment, or for an FCM
    /// notification.
    public func request(for app: RelayApp) -> APNsNotification? {
        guard case .apns(let apns) = message else { return nil }
        return apns.request(for: app)
    }

    /// Whether `app`, as this instance knows it, can send the notification
    /// (a credential for its environment, or FCM credentials); nil when it
    /// can, else why not.
    public func refusal(by app: RelayApp) -> String? {
        switch message {
        case .apns(let apns):
            app.credential(for: apns.environment) == nil ? "app \(app.id) does not serve \(apns.environment.rawValue)" : nil
        case .fcm:
            app.fcm == nil ? "app \(app.id) has no FCM credentials" : nil
        }
    }

    /// `apns-expiration`, seconds since the epoch; nil: none (or not a
    /// number, which APNs refuses: the policy then bounds only the tries;
    /// an FCM message has none either: its `android.ttl` is FCM's to keep).
    public var expiration: Int64? {
        guard case .apns(let apns) = message else { return nil }
        return apns.headers.first { $0.name == "apns-expiration" }.flatMap { Int64($0.value) }
    }

    /// What the failed-push log names besides the token.
    public var failedPushSource: FailedPushSource { FailedPushSource(notification: source) }
}
