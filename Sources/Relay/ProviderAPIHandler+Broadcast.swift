import APNsCore
import HTTP1
import HTTPCore
import ProviderAPI
import RelayCore

// APNs' broadcast API: Live Activity broadcasts and channel management.
extension ProviderAPIHandler {
    /// `POST /4/broadcasts/apps/<bundle id>` and `/1/apps/<bundle id>/channels`,
    /// `/all-channels`: checked as APNs checks them, then sent with the
    /// app's credential for the path's environment (the bundle id is the
    /// app's topic) and answered as APNs answered, byte for byte. One log
    /// line, without the payload.
    func broadcast(_ request: HTTP1Request, environment: APNsEnvironment, _ apnsCall: APNsBroadcastCall,
                   bundleID: String, _ call: APICall, completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        let requestID = request.headers["apns-request-id"] ?? makeAPNsID(random: &random)
        let what = "\(request.method) \(apnsCall) bundle=\(bundleID) env=\(environment.rawValue)"
        func refuse(_ refusal: APNsBroadcastRefusal, _ why: String) -> HTTP1Response {
            logAPI(call, status: refusal.status, detail: "\(what) refused: \(why)")
            return Self.response(broadcastAnswer(for: refusal, requestID: requestID))
        }
        let checked: CheckedBroadcastCall
        switch checkBroadcastCall(apnsCall, method: request.method, headers: request.headers, body: request.body) {
        case .success(let passed): checked = passed
        case .failure(let refusal): return refuse(refusal, refusal.reason)
        }
        // No app of the relay's has the bundle id, or none for this
        // environment: APNs' answer to credentials that do not cover it.
        guard let app = app(topic: bundleID) else {
            return refuse(APNsBroadcastRefusal(.topicMismatch), "no app has that bundle id")
        }
        guard call.authorization.allows(app: app.id) else { return forbidden(call, app: app.id) }
        guard let credential = app.credential(for: environment) else {
            return refuse(APNsBroadcastRefusal(.topicMismatch), "app \(app.id) does not serve \(environment.rawValue)")
        }
        guard let sender = loopContext.broadcasts else {
            // A sender of notifications only (tests'): APNs cannot be asked.
            let answer = broadcastAnswer(for: .failed(.allConnectionsDown), requestID: requestID)
            logAPI(call, status: answer.status, detail: "\(what) app=\(app.id): no broadcast sender")
            return Self.response(answer)
        }
        let path = apnsCall == .broadcast ? "/4/broadcasts/apps/\(bundleID)"
            : "/1/apps/\(bundleID)/\(apnsCall == .channels ? "channels" : "all-channels")"
        let apns = APNsBroadcastRequest(
            host: apnsCall == .broadcast ? .notifications : .channelManagement, environment: environment,
            credential: credential, method: request.method, path: path, headers: checked.headers, body: checked.body)
        sender.send(apns) { [weak self] answer in
            let written = broadcastAnswer(for: answer, requestID: requestID)
            self?.logAPI(call, status: written.status, detail: "\(what) app=\(app.id)")
            completion(Self.response(written))
        }
        return nil
    }
}
