import APNsCore
import AsyncPush
import Delivery
import EventLoop
import Feedback
import HTTPCore
import ProviderAPI
import RelayCore

// gorush's `/api/push` and Apple's `/3/device/<token>`.
extension ProviderAPIHandler {
    /// `POST /api/push`: every token of every notification sent at once
    /// over the loop's pools, an iOS token's (platform 1) to APNs, an
    /// Android token's (platform 2) to FCM; the answer once the services
    /// answered them all, or, asynchronous (`"async": true`, or
    /// `API_ASYNC`), once they are queued. `counts` counts platform 2's
    /// tokens where the notification's app has FCM credentials, as a gorush
    /// with Android enabled (`sendsFCM`).
    func push(_ request: HTTP1Request, _ call: APICall,
              completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        let decoded: GorushPushRequest
        do { decoded = try decodeGorushPushRequest(request.body, limits: context.limits) } catch {
            logAPI(call, status: 400, detail: "refused: \(error.message)")
            return jsonError(400, error.message)
        }
        let notifications = decoded.notifications
        let counts = gorushCount(of: notifications, countingFCM: sendsFCM)
        var failures: [FailedPushLog] = []
        // Each APNs request with the token as the sender wrote it (the logs echo
        // that, so gorush clients find their own strings) and the index of its
        // notification's app and failed-push source, which its tokens share.
        var sends: [(APNsNotification, String, Int)] = []
        var fcmSends: [FCMSend] = []
        var groups: [PushGroup] = []
        sends.reserveCapacity(notifications.reduce(0) { $0 + $1.tokens.count })
        for notification in notifications {
            if notification.platform == 2 {
                if let refused = acceptFCM(notification, call, sends: &fcmSends, groups: &groups, failures: &failures) {
                    return forbidden(call, app: refused)
                }
                continue
            }
            let mapping = mapGorushNotification(notification)
            failures.append(contentsOf: mapping.failures)
            guard let push = mapping.push else { continue }
            let named = push.app.map { app(id: $0) } ?? app(topic: push.topic ?? "")
                ?? push.bundleID.flatMap { app(topic: $0) }
            guard let app = named else {
                let why = push.app.map { "no app \($0)" } ?? "no app has topic \(push.topic ?? "")"
                failures.append(contentsOf: push.tokens.map {
                    FailedPushLog(notification: notification, token: $0, app: push.app, failure: why)
                })
                continue
            }
            // A request names its apps; one the key may not send for
            // refuses the whole request before anything is sent.
            guard call.authorization.allows(app: app.id) else { return forbidden(call, app: app.id) }
            guard let credential = app.credential(for: push.environment) else {
                failures.append(contentsOf: push.tokens.map {
                    FailedPushLog(notification: notification, token: $0, app: app.id,
                                  failure: "app \(app.id) does not serve \(push.environment.rawValue)")
                })
                continue
            }
            let apnsID = push.headers.first { $0.name == "apns-id" }?.value ?? ""
            groups.append((app, FailedPushSource(notification: .init(notification))))
            // The push type's topic, as APNs requires it (and as the sender
            // wrote it when the app was found by it).
            let headers = APNsRequestHeaders(topic: apnsTopic(appTopic: app.topic, pushType: push.pushType), push.headers)
            for (token, deviceToken) in zip(push.tokens, push.deviceTokens) {
                let apns = APNsNotification(to: deviceToken, environment: push.environment, credential: credential,
                                            headers: headers, payload: push.payload, apnsID: apnsID, ttl: 0)
                sends.append((apns, token, groups.count - 1))
            }
        }
        let tokenCount = sends.count + fcmSends.count + failures.count
        let counted = "notifications=\(notifications.count) tokens=\(tokenCount)"
            + Self.serviceWord(apns: !sends.isEmpty, fcm: !fcmSends.isEmpty)
        if decoded.async ?? context.async.byDefault {
            if let shared = context.async.shared {
                return pushShared(sends: sends, fcmSends: fcmSends, groups: groups, failures: failures, counts: counts,
                                  summary: counted, queue: shared,
                                  call, completion: completion)
            }
            return pushAsync(sends: sends, fcmSends: fcmSends, groups: groups, failures: failures, counts: counts,
                             summary: counted, queue: asyncQueue,
                             call)
        }
        for failure in failures { context.feedback.post(failure) }

        let batch = DeliveryBatch<FailedPushLog>(failures: failures)
        let metrics = self.metrics
        for (apns, token, group) in sends {
            // The completion holds the two labels it counts with, not the
            // app and the request (each token's completion copied them).
            let (appID, environment) = (groups[group].app.id, apns.environment)
            let start = delivery.deliver(apns, app: groups[group].app, token: token,
                                         posting: .everyFailure(groups[group].source)) { delivery, log in
                metrics?.countNotification(app: appID, environment: environment, outcome: delivery.outcome)
                batch.complete(log)
            }
            switch start {
            case .sent:
                batch.begin()
            case .overloaded(let log):
                metrics?.countNotification(app: appID, environment: environment, outcome: .overloaded)
                if let log { batch.record(log) }
            }
        }
        deliverFCM(fcmSends, groups: groups, into: batch)
        let summary = { (failed: Int) in "\(counted) failed=\(failed)" }
        guard batch.isWaiting else {
            logAPI(call, status: 200, detail: summary(batch.failures.count))
            return Self.pushResponse(counts: counts, logs: batch.failures)
        }
        batch.whenDone { [weak self] batch in
            self?.logAPI(call, status: 200, detail: summary(batch.failures.count))
            completion(Self.pushResponse(counts: counts, logs: batch.failures))
        }
        return nil
    }

    /// The asynchronous `/api/push`: every token queued, or none (a request
    /// whose tokens do not all fit under `API_ASYNC_MAX_PENDING` is refused
    /// whole, 503 with `Retry-After`, so a 200 never names a token that was
    /// not queued); then gorush's async answer, `{"counts":N,"logs":[],
    /// "success":"ok"}`. Tokens that failed before APNs (no app, …) go to
    /// the hook, as in sync mode, but are not in the answer, as in gorush's.
    private func pushAsync(sends: [(APNsNotification, String, Int)], fcmSends: [FCMSend], groups: [PushGroup],
                           failures: [FailedPushLog], counts: Int, summary: String, queue: AsyncDeliveryQueue,
                           _ call: APICall) -> HTTP1Response {
        let bound = context.async.bound
        let queued = sends.count + fcmSends.count
        guard bound.reserve(queued) else {
            logAPI(call, status: 503, detail: "async \(summary) refused: \(bound.pending) pending, "
                + "API_ASYNC_MAX_PENDING \(bound.maxPending)")
            return asyncRefusal(Self.queueFullMessage(tokens: queued, maxPending: bound.maxPending))
        }
        for failure in failures { context.feedback.post(failure) }
        let now = FeedbackSink.unixMilliseconds()
        for (apns, token, group) in sends {
            let app = groups[group].app
            queue.enqueue(AsyncNotification(apns, appID: app.id, token: token, source: groups[group].source.notification,
                                            acceptedAt: now), app: app)
        }
        for (fcm, group) in fcmSends {
            let app = groups[group].app
            queue.enqueue(AsyncNotification(fcm, appID: app.id, source: groups[group].source.notification,
                                            acceptedAt: now), app: app)
        }
        logAPI(call, status: 200, detail: "async \(summary) queued=\(queued) failed=\(failures.count)")
        return Self.pushResponse(counts: counts, logs: [])
    }

    /// The asynchronous `/api/push` of a fleet (`REDIS_URL`): answered 200
    /// only once Redis took every token (all or none, within
    /// `API_ASYNC_MAX_PENDING` across the fleet); 503 with `Retry-After`
    /// when the fleet's queue is full or Redis did not take the write
    /// (down, an error, no answer in time): never a 200 for what Redis may
    /// not hold.
    private func pushShared(sends: [(APNsNotification, String, Int)], fcmSends: [FCMSend],
                            groups: [PushGroup], failures: [FailedPushLog],
                            counts: Int, summary: String, queue: any AsyncSharedQueue,
                            _ call: APICall, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        guard !sends.isEmpty || !fcmSends.isEmpty else {
            for failure in failures { context.feedback.post(failure) }
            logAPI(call, status: 200, detail: "async \(summary) queued=0 failed=\(failures.count)")
            return Self.pushResponse(counts: counts, logs: [])
        }
        let now = FeedbackSink.unixMilliseconds()
        let items = sends.map { apns, token, group in
            AsyncNotification(apns, appID: groups[group].app.id, token: token,
                              source: groups[group].source.notification, acceptedAt: now)
        } + fcmSends.map { fcm, group in
            AsyncNotification(fcm, appID: groups[group].app.id, source: groups[group].source.notification,
                              acceptedAt: now)
        }
        let hop = LoopHop(self, completion, loop: loop)
        let tokens = items.count
        queue.add(items) { result in
            hop.run { handler, completion in
                completion(handler.sharedAnswer(result, tokens: tokens, failures: failures, counts: counts,
                                                summary: summary, call))
            }
        }
        return nil
    }

    private func sharedAnswer(_ result: AsyncSharedAddResult, tokens: Int, failures: [FailedPushLog], counts: Int,
                              summary: String, _ call: APICall) -> HTTP1Response {
        let message: String
        switch result {
        case .added:
            for failure in failures { context.feedback.post(failure) }
            logAPI(call, status: 200, detail: "async \(summary) queued=\(tokens) failed=\(failures.count)")
            return Self.pushResponse(counts: counts, logs: [])
        case .full:
            logAPI(call, status: 503, detail: "async \(summary) refused: the fleet's queue is full "
                + "(API_ASYNC_MAX_PENDING \(context.async.bound.maxPending))")
            message = Self.queueFullMessage(tokens: tokens, maxPending: context.async.bound.maxPending)
        case .failed(let why):
            logAPI(call, status: 503, detail: "async \(summary) refused: \(why)")
            message = "The queue cannot take notifications now. Nothing was queued; try again later."
        }
        return asyncRefusal(message)
    }

    /// The one wording of a full queue, in-process or the fleet's: a
    /// sender reads the same answer from every instance.
    /// ` service=apns`, ` service=fcm` or ` service=apns,fcm`: the push
    /// services a request's tokens went to; nothing when none went.
    static func serviceWord(apns: Bool, fcm: Bool) -> String {
        switch (apns, fcm) {
        case (true, true): " service=apns,fcm"
        case (true, false): " service=apns"
        case (false, true): " service=fcm"
        case (false, false): ""
        }
    }

    static func queueFullMessage(tokens: Int, maxPending: Int) -> String {
        "The queue is full: \(tokens) tokens would pass API_ASYNC_MAX_PENDING (\(maxPending)). "
            + "Nothing was queued; try again later."
    }

    /// An asynchronous request refused whole: gorush's error JSON, 503 and
    /// `Retry-After`.
    private func asyncRefusal(_ message: String) -> HTTP1Response {
        var response = jsonError(503, message)
        response.headers.append(HTTPField(name: "Retry-After", value: String(AsyncPushes.retryAfterSeconds)))
        return response
    }

    static func pushResponse(counts: Int, logs: [FailedPushLog]) -> HTTP1Response {
        HTTP1Response(status: 200, headers: jsonHeaders, body: encodeGorushResponse(counts: counts, logs: logs))
    }

    /// `POST /3/device/<token>`: Apple's request, authenticated as APNs
    /// authenticates a provider (`authorizeProxyRequest`) and answered as
    /// APNs answered it. `environment`: the path's; the `host` field may
    /// name the other (`proxyEnvironment`).
    func device(_ request: HTTP1Request, environment pathEnvironment: APNsEnvironment, token: String,
                started: UInt64, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        let apnsID = proxyAnswerID(headers: request.headers, generated: makeAPNsID(random: &random))
        let authorization: APIAuthorization
        switch proxyAuthenticator.authorize(request, context: context, now: unixTime()) {
        case .success(let authorized): authorization = authorized
        case .failure(let refusal):
            logAPI("device", key: "-", status: refusal.status, detail: "refused: \(refusal.reason.rawValue)",
                   started: started)
            return Self.response(proxyAnswer(for: refusal, apnsID: apnsID))
        }
        guard case .key(let keyName, _) = authorization else {
            preconditionFailure("ProviderAPIHandler: an authorized proxy request has a key")
        }
        let call = APICall(route: "device", key: keyName, authorization: authorization, started: started)
        let environment = proxyEnvironment(host: request.headers["host"], path: pathEnvironment)
        let proxied: ProxyNotification
        switch parseProxyRequest(token: token, headers: request.headers, body: request.body) {
        case .success(let parsed): proxied = parsed
        case .failure(let refusal):
            logAPI(call, status: refusal.status, detail: "refused: \(refusal.reason.rawValue)")
            return Self.response(proxyAnswer(for: refusal, apnsID: apnsID))
        }
        let pushType = proxied.headers.first { $0.name == "apns-push-type" }?.value
        guard let app = proxyAppTopics(topic: proxied.topic, pushType: pushType).lazy.compactMap({ self.app(topic: $0) })
            .first else {
            // No app of the relay's has that topic: APNs' answer to a topic
            // it does not know.
            logAPI(call, status: 400, detail: "refused: BadTopic (no app has that topic)")
            return Self.response(proxyAnswer(for: APNsProxyRefusal(.badTopic), apnsID: apnsID))
        }
        guard call.authorization.allows(app: app.id) else {
            // A topic the caller's credentials do not cover.
            logAPI(call, status: 400, detail: "refused: TopicDisallowed (key may not send for app \(app.id))")
            return Self.response(proxyAnswer(for: APNsProxyRefusal(.topicDisallowed), apnsID: apnsID))
        }
        guard let credential = app.credential(for: environment) else {
            logAPI(call, status: 400, detail: "refused: app \(app.id) does not serve \(environment.rawValue)")
            return Self.response(proxyAnswer(for: APNsProxyRefusal(.topicDisallowed), apnsID: apnsID))
        }
        let sentID = proxied.headers.first { $0.name == "apns-id" }?.value ?? apnsID
        var headers = proxied.headers
        if !headers.contains(where: { $0.name == "apns-id" }) { headers.append(HTTPField(name: "apns-id", value: apnsID)) }
        // The client's topic as written: a suffixed one (`.voip`, …) is what
        // APNs routes the push type by.
        let apns = APNsNotification(to: proxied.token, environment: environment, credential: credential,
                                    headers: APNsRequestHeaders(topic: proxied.topic, headers), payload: proxied.payload,
                                    apnsID: sentID, ttl: 0)
        let metrics = self.metrics
        let start = proxyDelivery.deliver(apns, app: app, token: proxied.token,
                                          posting: .everyFailure(FailedPushSource(sentAPNsID: sentID))) {
            [weak self] apnsAnswer, _ in
            let delivery = apnsAnswer.delivery
            metrics?.countNotification(app: app.id, environment: environment, outcome: delivery.outcome)
            let answer = proxyAnswer(for: delivery.outcome, apnsID: sentID, uniqueID: apnsAnswer.uniqueID,
                                     timestamp: delivery.unregisteredTimestamp,
                                     retryAfterSeconds: delivery.retryAfterSeconds)
            self?.logAPI(call, status: answer.status, detail: "app=\(app.id) service=apns env=\(environment.rawValue)")
            completion(Self.response(answer))
        }
        guard case .sent = start else {
            metrics?.countNotification(app: app.id, environment: environment, outcome: .overloaded)
            logAPI(call, status: 503, detail: "over MAX_IN_FLIGHT")
            return Self.response(proxyAnswer(for: .overloaded, apnsID: sentID))
        }
        return nil
    }

    static func response(_ answer: APNsProxyAnswer) -> HTTP1Response {
        var headers = answer.headers
        if !answer.body.isEmpty { headers.append(contentsOf: jsonHeaders) }
        return HTTP1Response(status: answer.status, headers: headers, body: answer.body)
    }
}
