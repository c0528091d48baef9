import AsyncPush
import Delivery
import EventLoop
import Feedback
import HTTP1
import HTTPCore
import Observability
import ProviderAPI
import RelayCore

/// The provider API (ARCHITECTURE.md §5.2) for one event loop of the API listener:
/// gorush's `/api/push` and `/healthz`, Apple's request at `/3/device/…`,
/// pyapns' XML-RPC and the feedback list. Every answer that carries a
/// notification's fate comes after APNs answered it (never a 2xx for a
/// notification APNs did not accept). One log line per request, never a
/// payload, a key or a full token.
///
/// Thread-confined to its loop, like the sender it is given.
public final class ProviderAPIHandler: HTTP1RequestHandler {
    /// What this loop's handlers share: the apps, the log, the metrics.
    public let loopContext: LoopContext
    /// What every loop's provider API shares: keys, provisioned apps,
    /// feedback, limits.
    let context: ProviderAPIContext
    /// This loop's request and notification counts (with METRICS_PORT).
    let metrics: ProviderMetricsRecorder?
    /// Where every route's notifications go.
    let delivery: DeliveryPath<APNsPush>
    /// Where Apple's request at `/3/device/` goes: the same sender and
    /// counts, its answer with APNs' `apns-unique-id` (`APNsProxyPush`).
    let proxyDelivery: DeliveryPath<APNsProxyPush>
    /// Where `/api/push`'s Android tokens go (gorush platform 2); nil: the
    /// loop has no FCM client.
    let fcmDelivery: DeliveryPath<FCMPush>?
    /// This loop's queue of asynchronous notifications.
    public let asyncQueue: AsyncDeliveryQueue
    /// The loop the handler is confined to: answers that waited for Redis
    /// come back to it, retries wait on its timers.
    let loop: EventLoop
    let output: RelayLog
    let unixTime: () -> Int
    var random = BufferedRandom()
    /// `/3/device/`'s provider-token checks, with this loop's cache.
    let proxyAuthenticator = ProxyAuthenticator()

    /// The provider API handler of `loopContext`'s loop, `loop`; its
    /// notifications count against `counters` (the API listener's
    /// `MAX_IN_FLIGHT`), asynchronous ones queued on the loop
    /// (`AsyncDeliveryQueue`, its retries on the loop's timers).
    public init(loopContext: LoopContext, context: ProviderAPIContext, counters: InFlightDeliveries,
                loop: EventLoop, unixTime: @escaping () -> Int = WebPushHandler.unixTime) {
        (self.loopContext, self.context) = (loopContext, context)
        self.loop = loop
        metrics = loopContext.providerMetrics
        let delivery = DeliveryPath(service: loopContext.apns, counters: counters, feedback: context.feedback)
        self.delivery = delivery
        proxyDelivery = DeliveryPath(service: APNsProxyPush(sender: loopContext.apns.sender), counters: counters,
                                     feedback: context.feedback)
        let fcmDelivery = loopContext.fcm.map { DeliveryPath(service: $0, counters: counters, feedback: context.feedback) }
        self.fcmDelivery = fcmDelivery
        let metrics = self.metrics
        asyncQueue = context.async.makeQueue(on: loop, path: delivery, fcmPath: fcmDelivery,
                                             apps: { [loopContext, context] id in
            context.app(id: id, configured: loopContext.apps)
        }) { item, outcome in
            switch (item.message, outcome) {
            case (.apns(let message), .apns(let outcome)):
                metrics?.countNotification(app: item.appID, environment: message.environment, outcome: outcome)
            case (.fcm, .fcm(let outcome)):
                metrics?.countNotification(app: item.appID, fcm: outcome)
            default:
                break
            }
        }
        output = loopContext.output
        self.unixTime = unixTime
    }

    /// The configured apps now (the loop context's).
    var apps: RelayApps { loopContext.apps }

    public func flushLog() { loopContext.flushLog() }
    public func logRefusal(status: Int, reason: String) { output.logRefusal(status: status, reason: reason) }
    /// API clients read every error as gorush's JSON, the connection's own too.
    public var refusals: HTTP1Refusals { .gorushJSON }

    public func handle(_ request: HTTP1Request, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        let started = EventLoop.monotonicNanoseconds()
        let route = apiRoute(method: request.method, target: request.target)
        switch route {
        case .health:
            // gorush's heartbeat: 200 with nothing in it, no key needed.
            return HTTP1Response(status: 200)
        case .notFound:
            logAPI("-", key: "-", status: 404, detail: "no such route", started: started)
            return jsonError(404, "not found")
        case .methodNotAllowed(let allow):
            logAPI("-", key: "-", status: 405, detail: "method \(request.method) not allowed", started: started)
            var response = jsonError(405, "method \(request.method) not allowed here")
            response.headers.append(HTTPField(name: "Allow", value: allow))
            return response
        case .device(let environment, let token):
            // Authenticated as APNs authenticates, answered with its reasons.
            return device(request, environment: environment, token: token, started: started, completion: completion)
        case .push, .xmlRPC, .feedback, .broadcast:
            break
        }
        let authorization = context.authorize(request.headers["authorization"])
        let name = routeName(route)
        guard case .key(let key, _) = authorization else {
            let detail = authorization == .missing ? "no API key" : "not one of the relay's API keys"
            logAPI(name, key: "-", status: 401, detail: detail, started: started)
            return unauthorized(route, detail)
        }
        let call = APICall(route: name, key: key, authorization: authorization, started: started)
        switch route {
        case .push:
            return push(request, call, completion: completion)
        case .xmlRPC:
            return xmlRPC(request, call, completion: completion)
        case .feedback(let appID):
            return feedback(appID, call, completion: completion)
        case .broadcast(let environment, let apnsCall, let bundleID):
            return broadcast(request, environment: environment, apnsCall, bundleID: bundleID, call,
                             completion: completion)
        case .health, .notFound, .methodNotAllowed, .device:
            preconditionFailure("ProviderAPIHandler: route \(route) was answered above")
        }
    }

    /// `GET /api/feedback/<app>`: the app's dead tokens, cleared by the read.
    private func feedback(_ appID: String, _ call: APICall,
                          completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        guard app(id: appID) != nil else {
            logAPI(call, status: 404, detail: "no such app")
            return jsonError(404, "no app \(appID)")
        }
        guard call.authorization.allows(app: appID) else { return forbidden(call, app: appID) }
        return takeFeedback(app: appID, completion: completion) { handler, entries, redisFailure in
            handler.logAPI(call, status: 200, detail: "app=\(appID) entries=\(entries.count)"
                + Self.onlyThisInstance(redisFailure), warning: redisFailure != nil)
            return HTTP1Response(status: 200, headers: jsonHeaders, body: feedbackJSON(entries))
        }
    }

    /// A pull's log detail when Redis could not be asked.
    static func onlyThisInstance(_ redisFailure: String?) -> String {
        redisFailure.map { " (this instance's only: \($0))" } ?? ""
    }

    // MARK: apps

    /// A configured app or a provisioned one, by id.
    func app(id: String) -> RelayApp? {
        context.app(id: id, configured: apps)
    }

    /// The app for an `apns-topic` / gorush `topic`: the configured app with
    /// that topic, else a provisioned one; an empty topic: the default app.
    func app(topic: String) -> RelayApp? {
        guard !topic.isEmpty else { return apps.defaultApp }
        return apps.app(topic: topic) ?? context.provisioned.app(topic: topic)
    }

    // MARK: answers and log lines

    struct APICall {
        var route: String
        /// The key's name (never the key).
        var key: String
        var authorization: APIAuthorization
        var started: UInt64
    }

    private func routeName(_ route: APIRoute) -> String {
        switch route {
        case .push: "push"
        case .device: "device"
        case .xmlRPC: "xmlrpc"
        case .feedback: "feedback"
        case .broadcast(_, let apnsCall, _): apnsCall == .broadcast ? "broadcast" : "channels"
        case .health: "health"
        case .notFound, .methodNotAllowed: "-"
        }
    }

    private func unauthorized(_ route: APIRoute, _ detail: String) -> HTTP1Response {
        // XML-RPC clients send the key as HTTP Basic credentials.
        let challenge = route == .xmlRPC ? "Basic realm=\"toot-relay API\"" : "Bearer realm=\"toot-relay API\""
        var response = jsonError(401, "\(detail): send Authorization: Bearer <key>")
        response.headers.append(HTTPField(name: "WWW-Authenticate", value: challenge))
        return response
    }

    func forbidden(_ call: APICall, app: String) -> HTTP1Response {
        logAPI(call, status: 403, detail: "key may not send for app \(app)")
        return jsonError(403, "this API key may not send for app \(app)")
    }

    func jsonError(_ status: Int, _ message: String) -> HTTP1Response {
        HTTP1Refusals.gorushJSON.response(status: status, reason: message)
    }

    /// `api <route> key=<name> status=… <detail> latency=…ms`.
    /// `warning`: a warning line whatever the status.
    func logAPI(_ call: APICall, status: Int, detail: String, warning: Bool = false) {
        logAPI(call.route, key: call.key, status: status, detail: detail, started: call.started, warning: warning)
    }

    func logAPI(_ route: String, key: String, status: Int, detail: String, started: UInt64, warning: Bool = false) {
        metrics?.countRequest(route: route, status: status)
        let level: LogLevel = status >= 500 || warning ? .warning : .info
        output.log(level) { line in
            line.append(contentsOf: "api ".utf8)
            line.append(contentsOf: route.utf8)
            line.append(contentsOf: " key=".utf8)
            line.append(contentsOf: key.utf8)
            line.append(contentsOf: " status=".utf8)
            appendDecimal(status, to: &line)
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: detail.utf8)
            line.append(contentsOf: " latency=".utf8)
            RelayLog.appendLatency(since: started, to: &line)
        }
    }
}

let jsonHeaders = [HTTPField(name: "Content-Type", value: "application/json; charset=utf-8")]
