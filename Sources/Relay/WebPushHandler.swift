import APNsCore
import Delivery
import EventLoop
import Feedback
import Glibc
import HTTPCore
import Observability
import RelayCore
import VAPID

/// The relay's logic for one event loop: route → validate → build the APNs
/// notification → send → map the outcome to the answer (WIRE.md §1–§3), and
/// one log line per request.
///
/// Thread-confined to its loop, like the sender it is given.
public final class WebPushHandler {
    /// What this loop's handlers share: the apps, the log, the metrics.
    public let loopContext: LoopContext
    private let delivery: DeliveryPath<APNsPush>
    /// The FCM URLs' path; nil when the loop has no FCM client.
    let fcmDelivery: DeliveryPath<FCMPush>?
    /// Where lines go; on a loop, they are written once per loop iteration.
    let output: RelayLog
    let maxTTL: Int
    /// Unix time in seconds (replaceable for tests).
    let unixTime: () -> Int
    var random = BufferedRandom()
    /// Restricted endpoints (RFC 8292 §4).
    private var vapid: VAPIDGate
    let metrics: RelayMetricsRecorder?
    private var unknownApps = UnknownAppWarnings()

    /// The Web Push handler of `loopContext`'s loop: its notifications
    /// count against `counters` (`MAX_IN_FLIGHT`), and dead tokens go to
    /// `feedback`. `publicURL`: `PUBLIC_URL`, the origin a restricted
    /// endpoint's VAPID `aud` must name; nil: each request's scheme and `Host`.
    public init(loopContext: LoopContext, counters: InFlightDeliveries, feedback: FeedbackSink,
                maxTTL: Int = Configuration.maxTTL, publicURL: String? = nil, listenerIsTLS: Bool = false,
                unixTime: @escaping () -> Int = WebPushHandler.unixTime) {
        self.loopContext = loopContext
        metrics = loopContext.webPushMetrics
        output = loopContext.output
        delivery = DeliveryPath(service: loopContext.apns, counters: counters, feedback: feedback)
        fcmDelivery = loopContext.fcm.map { DeliveryPath(service: $0, counters: counters, feedback: feedback) }
        self.maxTTL = maxTTL
        self.vapid = VAPIDGate(publicURL: publicURL, listenerIsTLS: listenerIsTLS)
        self.unixTime = unixTime
    }

    /// The apps served now (the loop context's).
    var apps: RelayApps { loopContext.apps }

    /// CLOCK_REALTIME seconds. Not time(2): glibc serves it from the coarse
    /// clock, which lags up to a tick and would date apns-expiration a second
    /// early at a second boundary.
    public static func unixTime() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int(now.tv_sec)
    }

    /// Answers `request`. Returns the response when it is known at once
    /// (routing, validation, health, overload); otherwise returns nil and
    /// calls `completion` exactly once later, on the loop thread, never
    /// inside this call.
    public func handle(_ request: HTTP1Request, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        answer(request, completion: completion)
    }

    private func answer(_ request: HTTP1Request, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        let started = EventLoop.monotonicNanoseconds()
        switch route(method: request.method, target: request.target) {
        case .health(let appID):
            let response = health(of: appID)
            log(.debug, "\(request.method) /relay-to/_health\(appID.map { "/" + $0 } ?? "") status=\(response.status)")
            return response
        case .methodNotAllowed(let allow):
            var response = plain(405, "method \(request.method) not allowed here")
            response.headers.append(HTTPField(name: "Allow", value: allow))
            logLocal(request, status: 405, reason: "method not allowed", started: started)
            return response
        case .notFound:
            logLocal(request, status: 404, reason: "no such route", started: started)
            return plain(404, "not found")
        case .relay(let target):
            guard let app = apps.app(for: target.app) else { return noApp(for: target, started: started) }
            guard let credential = app.credential(for: target.environment) else {
                output.logRelay(target, app: app.id, status: 404,
                                reason: "app does not serve \(target.environment.rawValue)", started: started)
                return plain(404, "not found")
            }
            if let refusal = restrictionRefusal(request, keyHash: target.vapidKeyHash, app: app) {
                output.logRelay(target, app: app.id, status: refusal.response.status, reason: refusal.reason,
                                started: started)
                return refusal.response
            }
            return relay(request, to: target, app: app, credential: credential, started: started,
                         completion: completion)
        case .relayFCM(let target):
            return relayFCM(request, to: target, started: started, completion: completion)
        }
    }

    /// A URL whose app the relay does not serve: 410 for an app the operator
    /// retired, so senders delete its subscriptions; else the relay's own
    /// mistake (a typo in the apps file, a reload that dropped an app, no
    /// default app), never the subscription's: 503, and a warning naming the
    /// id at most once a minute per loop.
    private func noApp(for target: RelayTarget, started: UInt64) -> HTTP1Response {
        let refusal = noAppRefusal(for: target.app)
        if refusal.response.status == 503 {
            metrics?.count(app: "-", environment: target.environment, status: 503, localReason: .unknownApp)
        }
        output.logRelay(target, app: "-", status: refusal.response.status, reason: refusal.reason, started: started)
        return refusal.response
    }

    /// `noApp`'s answer and its log line's reason, whichever service the
    /// URL names; the warning is logged here.
    func noAppRefusal(for reference: AppReference) -> (response: HTTP1Response, reason: String) {
        if apps.isRetired(reference) {
            return (plain(410, "this app is retired"), "app retired")
        }
        let name: String
        switch reference {
        case .defaultApp: name = "no default app (a URL without an app part)"
        case .id(let id), .idOrTopic(let id): name = "app \"\(loggableName(id))\""
        }
        if let warning = unknownApps.warning(about: name, now: EventLoop.monotonicNanoseconds()) {
            log(.warning, warning)
        }
        var response = plain(503, "no app configured for this URL: the relay's configuration, retry later")
        response.headers.append(HTTPField(name: "Retry-After", value: String(RetryAfter.unknownApp)))
        return (response, "no such app")
    }

    /// Restricted endpoints (RFC 8292 §4): nil when the push may
    /// go on; else the answer, which no refused push gets past. 401 without
    /// VAPID, 403 for another key (only a sender other than the subscribed
    /// server gets it), 503 when a correctly signed JWT's `aud` or `exp` does
    /// not fit (a replay, or this relay's origin or clock is wrong: never a
    /// 4xx that would delete a healthy subscription).
    /// The caller logs the refusal with its route's line.
    func restrictionRefusal(_ request: HTTP1Request, keyHash: [UInt8]?, app: RelayApp)
        -> (response: HTTP1Response, reason: String)? {
        guard let keyHash else {
            guard app.restrictedOnly else { return nil }
            metrics?.countVAPID(app: app.id, result: .unrestricted)
            let reason = "app \(app.id) takes restricted endpoints only (?vapid=)"
            return (plain(403, reason), reason)
        }
        let verdict = vapid.check(request, keyHash: keyHash, now: unixTime())
        metrics?.countVAPID(app: app.id, result: VAPIDResult(verdict))
        switch verdict {
        case .accepted:
            return nil
        case .unauthenticated(let reason):
            var response = plain(401, reason)
            response.headers.append(HTTPField(name: "WWW-Authenticate", value: "vapid"))
            return (response, reason)
        case .forbidden(let reason):
            return (plain(403, reason), reason)
        case .unverifiable(let doubt, let reason):
            let cause: String
            switch doubt {
            case .audience:
                cause = vapid.publicURL == nil
                    ? "the JWT names another origin than \(vapid.audience(of: request)) (a replay, or a proxy "
                        + "that does not pass Host with its port and X-Forwarded-Proto; or set PUBLIC_URL)"
                    : "the JWT names another origin than PUBLIC_URL \(vapid.audience(of: request)) (a replay, or PUBLIC_URL is wrong)"
            case .expired, .tooFarAhead:
                cause = "the JWT's exp does not fit this relay's clock (a replay, or a clock is wrong)"
            }
            log(.warning, "restricted endpoint: \(reason): \(cause)")
            var response = plain(503, reason)
            response.headers.append(HTTPField(name: "Retry-After", value: String(RetryAfter.vapidUnverifiable)))
            return (response, reason)
        }
    }

    /// `/relay-to/_health`: 503 only when every app's credentials are
    /// rejected (each push service's it has); `/relay-to/_health/<app>`:
    /// that app's, 503 when either service rejects them (404 for none).
    private func health(of appID: String?) -> HTTP1Response {
        guard let appID else {
            if apps.allCredentialsRejected {
                return plain(503, apps.all.contains { $0.fcm != nil } ? "APNs and FCM reject the relay's credentials"
                                  : "APNs rejects the relay's credentials")
            }
            return HTTP1Response(status: 200, headers: textPlainHeaders, body: "OK")
        }
        guard let app = apps.app(for: .id(appID)) else { return plain(404, "no such app") }
        if app.servesAPNs && app.health.credentialsRejected {
            return plain(503, "APNs rejects the credentials of app \(app.id)")
        }
        if let fcm = app.fcm, fcm.health.credentialsRejected {
            return plain(503, "FCM rejects the service account of app \(app.id)")
        }
        return HTTP1Response(status: 200, headers: textPlainHeaders, body: "OK")
    }

    private func relay(_ request: HTTP1Request, to target: RelayTarget, app: RelayApp, credential: CredentialID,
                       started: UInt64, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        let message: WebPushMessage
        switch parseWebPush(request, maxTTL: maxTTL) {
        case .success(let parsed): message = parsed
        case .failure(let error):
            metrics?.count(app: app.id, environment: target.environment, status: error.status, localReason: .invalidRequest)
            output.logRelay(target, app: app.id, status: error.status, reason: error.reason, started: started)
            return plain(error.status, error.reason)
        }
        let apnsID = makeAPNsID(random: &random)
        let notification: APNsNotification
        let ciphertextDropped: Bool
        do {
            (notification, ciphertextDropped) = try makeNotification(
                target: target, message: message, topic: app.topic, credential: credential, alert: app.alert,
                apnsID: apnsID, now: unixTime())
        } catch {
            metrics?.count(app: app.id, environment: target.environment, status: error.status, localReason: .invalidRequest)
            output.logRelay(target, app: app.id, status: error.status, reason: error.reason, started: started)
            return plain(error.status, error.reason)
        }
        if ciphertextDropped {
            log(.warning, "app=\(app.id) a body of \(message.body.count) bytes does not fit the APNs payload once "
                + "encoded: sent without its ciphertext, the phone shows the app's alert")
        }
        // The completion holds what it needs, not the handler: a weak
        // reference to the handler cost a second allocation per request
        // (the box of the weak reference).
        let output = self.output
        let metrics = self.metrics
        let ttl = message.ttl
        let appID = app.id
        let keyIDs = app.keyIDs
        let sent = metrics == nil ? 0 : EventLoop.monotonicNanoseconds()
        let start = delivery.deliver(notification, app: app, token: target.deviceToken, posting: .deadTokens) {
            delivery, _ in
            let outcome = delivery.outcome
            let answer = relayResponse(for: outcome, notification: apnsID, ttl: ttl,
                                       apnsRetryAfter: delivery.retryAfterSeconds)
            if let metrics {
                WebPushHandler.countDelivery(metrics, appID, target.environment, outcome: outcome,
                                           status: answer.status, sent: sent, ciphertextDropped: ciphertextDropped)
            }
            output.logDelivery(target, app: appID, outcome: outcome, answer: answer, apnsID: apnsID, started: started,
                               keyID: answer.credentialsRejected ? keyIDs[target.environment] : nil)
            completion(answer.http1Response)
        }
        guard case .sent = start else {
            let answer = relayResponse(for: .overloaded, notification: apnsID, ttl: message.ttl)
            metrics?.count(app: app.id, environment: target.environment, status: answer.status, localReason: .overloaded)
            output.logRelay(target, app: app.id, status: answer.status, reason: "over MAX_IN_FLIGHT", started: started)
            return answer.http1Response
        }
        return nil
    }

    /// Metrics of a notification APNs (or the way to it) has answered.
    private static func countDelivery(_ metrics: RelayMetricsRecorder, _ app: String, _ environment: APNsEnvironment,
                                      outcome: DeliveryOutcome, status: Int, sent: UInt64, ciphertextDropped: Bool) {
        if case .apns(let apnsStatus, let reason, _) = outcome {
            metrics.recordAPNsLatency(environment: environment, nanoseconds: EventLoop.monotonicNanoseconds() &- sent)
            if ciphertextDropped && apnsStatus == 200 {
                metrics.count(app: app, environment: environment, status: status, localReason: .payloadDropped)
            } else {
                metrics.count(app: app, environment: environment, status: status, apnsReason: reason)
            }
        } else {
            metrics.count(app: app, environment: environment, status: status, localReason: LocalReason(outcome))
        }
    }

    // MARK: logging (one line per request; never a payload or a full token)

    /// Writes the lines still waiting in this loop's buffer (shutdown). On
    /// the handler's loop.
    public func flushLog() {
        loopContext.flushLog()
    }

    /// A request the connection refused before routing (bad framing, over a
    /// limit, too slow).
    public func logRefusal(status: Int, reason: String) {
        output.logRefusal(status: status, reason: reason)
    }

    private func logLocal(_ request: HTTP1Request, status: Int, reason: String, started: UInt64) {
        output.logLocal(method: request.method, status: status, reason: reason, started: started)
    }

    func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        output.log(level) { $0.append(contentsOf: message().utf8) }
    }
}

func plain(_ status: Int, _ reason: String) -> HTTP1Response {
    HTTP1Refusals.plainText.response(status: status, reason: reason)
}
