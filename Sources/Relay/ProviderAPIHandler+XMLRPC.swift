import APNsCore
import Delivery
import Glibc
import HTTPCore
import ProviderAPI
import Provisioning
import PyAPNs
import RelayCore
import TLS
import XMLRPC

// pyapns' XML-RPC interface (pyapns/server.py): provision,
// notify, feedback. Faults are XML-RPC answers (HTTP 200), as Twisted sends
// them; only a missing or wrong key (401) and a key without the app (403)
// are HTTP errors.
extension ProviderAPIHandler {
    func xmlRPC(_ request: HTTP1Request, _ call: APICall,
                completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        let decoded: PyAPNsCall
        do {
            let rpc = try decodeXMLRPCCall(request.body, limits: context.xmlLimits)
            decoded = try pyAPNsCall(rpc)
        } catch let error as XMLRPCError {
            return fault(call, .undecodable(error))
        } catch let fault as PyAPNsFault {
            return self.fault(call, fault)
        } catch {
            preconditionFailure("xmlRPC: an error of an unknown kind: \(error)")
        }
        switch decoded {
        case .provision(let provision): return self.provision(provision, call, completion: completion)
        case .notify(let notify): return self.notify(notify, call, completion: completion)
        case .feedback(let appID): return pyAPNsFeedback(appID, call, completion: completion)
        }
    }

    private func provision(_ provision: PyAPNsProvision, _ call: APICall,
                           completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        guard isProvisionableAppID(provision.appID) else {
            return fault(call, PyAPNsFault(code: 8002, faultString:
                "app_id must be 1 to 64 letters, digits, '.', '_' or '-' (it names the app in logs and metrics)"))
        }
        guard call.authorization.allows(app: provision.appID) else { return forbidden(call, app: provision.appID) }
        let pem: [UInt8]
        switch provision.certificate {
        case .pem(let text):
            pem = Array(text.utf8)
        case .path(let path):
            switch readProvisionFile(path) {
            case .success(let bytes): pem = bytes
            case .failure(let fault): return self.fault(call, fault)
            }
        }
        let provisioned = context.provisioned
        if let sharing = provisioned.sharing, apps.app(for: .id(provision.appID)) == nil,
           provisioned.app(id: provision.appID) == nil {
            // A fleet: answered once the fleet took the app (SharedProvisionedApps).
            let answer = LoopHop(self, completion, loop: loop)
            sharing.provision(appID: provision.appID, pem: pem, environment: provision.environment,
                              into: provisioned) { outcome in
                answer.run { handler, completion in
                    completion(handler.provisionAnswer(outcome, provision, call))
                }
            }
            return nil
        }
        return provisionAnswer(Result { () throws(ProvisionedApps.Refusal) in
            try provisioned.provision(appID: provision.appID, pem: pem, environment: provision.environment,
                                      configured: apps, now: unixTime())
        }, provision, call)
    }

    private func provisionAnswer(_ outcome: Result<ProvisionedApps.Outcome, ProvisionedApps.Refusal>,
                                 _ provision: PyAPNsProvision, _ call: APICall) -> HTTP1Response {
        switch outcome {
        case .success(.provisioned(let app)):
            logAPI(call, status: 200, detail: "provisioned app=\(app.id) env=\(provision.environment.rawValue) topic=\(app.topic)")
        case .success(.alreadyKnown):
            // pyapns ignores a second provision of an id it knows.
            logAPI(call, status: 200, detail: "app=\(provision.appID) already known: ignored")
        case .failure(let error):
            return fault(call, PyAPNsFault(code: 8002, faultString: error.description))
        }
        return xmlAnswer(pyAPNsNilResponse)
    }

    /// A certificate path is read only inside API_PROVISION_DIR (a caller
    /// must not make the relay read any file it can).
    private func readProvisionFile(_ path: String) -> Result<[UInt8], PyAPNsFault> {
        guard let directory = context.provisionDirectory else {
            return .failure(PyAPNsFault(code: 8002, faultString:
                "certificate paths are not taken (API_PROVISION_DIR is unset): send the PEM text"))
        }
        guard let resolvedDirectory = realPath(directory), let resolved = realPath(path),
              resolved.hasPrefix(resolvedDirectory.hasSuffix("/") ? resolvedDirectory : resolvedDirectory + "/")
        else {
            return .failure(PyAPNsFault(code: 8002, faultString: "the certificate path is not a file inside API_PROVISION_DIR"))
        }
        guard let bytes = try? CredentialFile.read(resolved) else {
            return .failure(PyAPNsFault(code: 8002, faultString: "the certificate file cannot be read"))
        }
        return .success(bytes)
    }

    private func notify(_ notify: PyAPNsNotify, _ call: APICall,
                        completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        guard let app = app(id: notify.appID) else {
            guard let sharing = context.provisioned.sharing else { return fault(call, .notProvisioned) }
            // A fleet: the app may have been provisioned through another
            // instance since the last refresh; Redis is asked before the fault.
            let answer = LoopHop(self, completion, loop: loop)
            sharing.lookUp(notify.appID, into: context.provisioned) { found in
                answer.run { handler, completion in
                    guard let app = found else {
                        completion(handler.fault(call, .notProvisioned))
                        return
                    }
                    if let response = handler.notify(notify, app: app, call, completion: completion) {
                        completion(response)
                    }
                }
            }
            return nil
        }
        return self.notify(notify, app: app, call, completion: completion)
    }

    private func notify(_ notify: PyAPNsNotify, app: RelayApp, _ call: APICall,
                        completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        guard call.authorization.allows(app: app.id) else { return forbidden(call, app: app.id) }
        // A pyapns app has one environment; a configured app answers here
        // with its production credential, else its development one.
        let environment: APNsEnvironment = app.production != nil ? .production : .development
        guard let credential = app.credential(for: environment) else { return fault(call, .notProvisioned) }

        let batch = DeliveryBatch<DeliveryOutcome>()
        let metrics = self.metrics
        let source = FailedPushSource()
        let appID = app.id
        for (token, (payload, pushType)) in zip(notify.tokens, zip(notify.payloads, notify.pushTypes)) {
            let apns = APNsNotification(to: token, environment: environment, credential: credential,
                                        headers: APNsRequestHeaders(topic: app.topic, pushType.headers),
                                        payload: payload, apnsID: "", ttl: 0)
            let start = delivery.deliver(apns, app: app, token: token, posting: .everyFailure(source)) { delivery, log in
                metrics?.countNotification(app: appID, environment: environment, outcome: delivery.outcome)
                batch.complete(log == nil ? nil : delivery.outcome)
            }
            switch start {
            case .sent:
                batch.begin()
            case .overloaded:
                metrics?.countNotification(app: app.id, environment: environment, outcome: .overloaded)
                batch.record(.overloaded)
            }
        }
        let summary = "app=\(app.id) service=apns tokens=\(notify.tokens.count)"
        guard batch.isWaiting else {
            return notifyAnswer(batch.failures, call, summary: summary)
        }
        batch.whenDone { [weak self] batch in
            guard let self else { return }
            completion(self.notifyAnswer(batch.failures, call, summary: summary))
        }
        return nil
    }

    /// nil once APNs answered every token; fault 500 when some could not
    /// reach APNs at all (pyapns' "could not be made"). Tokens APNs refused
    /// are not a fault: they go to the feedback list, as in pyapns.
    private func notifyAnswer(_ failures: [DeliveryOutcome], _ call: APICall, summary: String) -> HTTP1Response {
        let unsent = failures.filter { if case .apns = $0 { false } else { true } }.count
        if unsent > 0 {
            logAPI(call, status: 200, detail: "\(summary) refused=\(failures.count - unsent) unsent=\(unsent): fault 500")
            return xmlAnswer(PyAPNsFault.noConnection.response)
        }
        logAPI(call, status: 200, detail: "\(summary) refused=\(failures.count)")
        return xmlAnswer(pyAPNsNilResponse)
    }

    private func pyAPNsFeedback(_ appID: String, _ call: APICall,
                                completion: @escaping (HTTP1Response) -> Void) -> HTTP1Response? {
        guard app(id: appID) != nil else { return fault(call, .notProvisioned) }
        guard call.authorization.allows(app: appID) else { return forbidden(call, app: appID) }
        return takeFeedback(app: appID, completion: completion) { handler, entries, redisFailure in
            handler.logAPI(call, status: 200, detail: "feedback app=\(appID) entries=\(entries.count)"
                + Self.onlyThisInstance(redisFailure), warning: redisFailure != nil)
            return handler.xmlAnswer(pyAPNsFeedbackResponse(entries.map { (unixSeconds: Int($0.time / 1000), token: $0.token) }))
        }
    }

    private func fault(_ call: APICall, _ fault: PyAPNsFault) -> HTTP1Response {
        logAPI(call, status: 200, detail: "fault \(fault.code)")
        return xmlAnswer(fault.response)
    }

    func xmlAnswer(_ body: [UInt8]) -> HTTP1Response {
        HTTP1Response(status: 200, headers: [HTTPField(name: "Content-Type", value: "text/xml")], body: body)
    }
}

private func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
