import APNsCore
import EventLoop
import Glibc
import HTTP2
import Synchronization
import TLS

/// One loop thread's share of the emulator: its listener, its connections,
/// a read buffer they share, its provider-token cache and a cached copy of
/// the behaviour. Confined to the loop thread.
final class EmulatorWorker {
    let loop: EventLoop
    let state: EmulatorState
    private var acceptor: Acceptor?
    private var connections: [ObjectIdentifier: EmulatorConnection] = [:]
    /// TLS reads land here; `receive` consumes it before the next read.
    let readBuffer: UnsafeMutableRawBufferPointer
    let providerTokens: EmulatorTokenVerifier?
    private var cachedBehavior: APNsEmulatorBehavior
    private var cachedVersion: UInt64
    var random = SystemRandomNumberGenerator()

    /// What to do with one complete request.
    enum Decision {
        case respond(status: Int, headers: [(name: String, value: String)], body: [UInt8])
        case noAnswer
        case resetStream
        case dropConnection
    }

    init(loop: EventLoop, state: EmulatorState, listener: Socket) throws(EventLoopError) {
        self.loop = loop
        self.state = state
        readBuffer = .allocate(byteCount: 65_536, alignment: 16)
        providerTokens = state.providerKeys.isEmpty
            ? nil : EmulatorTokenVerifier(keys: state.providerKeys, environment: state.configuration.environment)
        cachedVersion = state.behaviorVersion.load(ordering: .acquiring)
        cachedBehavior = state.behavior.withLock { $0 }
        acceptor = try Acceptor(listener: listener, on: loop, onAccept: { [unowned self] socket in
            self.accept(socket)
        }, onError: { [unowned self] error in
            self.state.log("accept failed: \(error)")
        })
    }

    deinit {
        readBuffer.deallocate()
    }

    /// The behaviour now in force (one atomic load unless it changed).
    var behavior: APNsEmulatorBehavior {
        let version = state.behaviorVersion.load(ordering: .acquiring)
        if version != cachedVersion {
            cachedBehavior = state.behavior.withLock { $0 }
            cachedVersion = version
        }
        return cachedBehavior
    }

    private func accept(_ socket: Socket) {
        let id = state.connections.wrappingAdd(1, ordering: .relaxed).newValue
        do {
            let connection = try EmulatorConnection(worker: self, socket: socket, id: id)
            connections[ObjectIdentifier(connection)] = connection
            state.openConnections.wrappingAdd(1, ordering: .relaxed)
            connection.start()
            state.log("connection \(id) accepted")
        } catch {
            state.log("connection \(id) refused: \(error)")
        }
    }

    func connectionClosed(_ connection: EmulatorConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        state.openConnections.wrappingSubtract(1, ordering: .relaxed)
    }

    /// How a connection whose handshake is complete authenticates.
    func credential(for tls: TLSConnection) -> ClientCredential {
        switch state.configuration.authentication {
        case .clientCertificate:
            // Only requested when the listener serves FCM too (its clients
            // have none): APNs then refuses a connection without one.
            guard tls.hasVerifiedPeerCertificate else { return .absent }
            return .certificate(uid: tls.peerCertificateSubjectUID)
        case .providerKeys: return providerTokens.map { .token($0) } ?? .none
        case .clientCertificateOrProviderKeys:
            // A certificate the handshake verified makes this a
            // certificate-based connection; without one, tokens decide.
            if tls.hasVerifiedPeerCertificate { return .certificate(uid: tls.peerCertificateSubjectUID) }
            return providerTokens.map { .token($0) } ?? .none
        case .none: return .none
        }
    }

    func announce(maxConcurrentStreams: UInt32) {
        for connection in connections.values {
            connection.announce(maxConcurrentStreams: maxConcurrentStreams)
        }
    }

    /// Closes the listener and every connection (on stop).
    func shutdown() {
        acceptor?.close()
        acceptor = nil
        for connection in Array(connections.values) {
            connection.close(graceful: true)
        }
    }

    // MARK: deciding

    /// Validation, then the key's token updates, then the fault table, then
    /// a forced action, else 200. `boundKey`: the key the connection is bound
    /// to, set by its first request whose token is taken.
    func decide(_ request: HTTP2Request, credential: ClientCredential, connectionID: Int,
                behavior: APNsEmulatorBehavior, boundKey: inout EmulatorTokenKey?) -> Decision {
        if let fcm = state.fcm, fcm.serves(path: request.path) {
            return decideFCM(request, fcm: fcm, connectionID: connectionID, behavior: behavior)
        }
        // `/4/…` and `/1/…`: the broadcast API. One byte tells it from
        // `/3/device/…`, so notifications pay no route matching.
        if request.path.utf8.dropFirst().first != UInt8(ascii: "3"),
           let (call, bundleID) = APNsBroadcastCall.route(request.path[...]) {
            return decideBroadcast(request, call, bundleID: bundleID, credential: credential, boundKey: &boundKey)
        }
        state.received.wrappingAdd(1, ordering: .relaxed)
        let now = Int(time(nil))
        let notification: ValidatedNotification
        switch APNsRequestValidator.validate(
            method: request.method, path: request.path, headers: request.headers, body: request.body,
            credential: credential, expectedTopic: state.configuration.expectedTopic, boundKey: boundKey, now: now) {
        case .failure(let rejection):
            return reject(rejection, apnsID: echoedID(request.header("apns-id")), now: now)
        case .success(let validated):
            notification = validated
        }
        if let key = notification.providerKey, let issuedAt = notification.providerTokenIssuedAt {
            if let updates = state.tokenUpdates, !updates.take(keyID: key.keyID, issuedAt: issuedAt, now: now) {
                return reject(APNsRejection(.tooManyProviderTokenUpdates), apnsID: echoedID(notification.apnsID),
                              now: now)
            }
            if boundKey == nil { boundKey = key }
        }
        var action = APNsFaultToken.action(forToken: notification.token.utf8)
        if action == nil, let forced = behavior.forcedAction, state.claimForced(behavior) {
            action = forced
        }
        if let action {
            switch action {
            case .reject(let status, let reason):
                return reject(APNsRejection(status: status, reason: reason), apnsID: echoedID(notification.apnsID),
                              now: now)
            case .rejectRetryingAfter(let status, let reason, let seconds):
                return reject(APNsRejection(status: status, reason: reason), apnsID: echoedID(notification.apnsID),
                              now: now, retryAfter: seconds)
            case .noAnswer:
                state.unanswered.wrappingAdd(1, ordering: .relaxed)
                return .noAnswer
            case .resetStream:
                state.resetStreams.wrappingAdd(1, ordering: .relaxed)
                return .resetStream
            case .dropConnection:
                state.droppedConnections.wrappingAdd(1, ordering: .relaxed)
                return .dropConnection
            }
        }
        let apnsID = notification.apnsID ?? UUIDKey.random(using: &random).text
        let uniqueID = makeUniqueID()
        if let key = notification.apnsIDKey {
            let fresh = state.ledger.withLock { $0.insert(key).inserted }
            if !fresh { state.duplicates.wrappingAdd(1, ordering: .relaxed) }
        }
        state.accepted.wrappingAdd(1, ordering: .relaxed)
        let observe = state.hasObserver.load(ordering: .acquiring)
        if state.configuration.recordNotifications || observe {
            let record = ReceivedNotification(
                deviceToken: String(notification.token), headers: request.headers, payload: request.body,
                apnsID: apnsID, apnsIDWasGenerated: notification.apnsID == nil, uniqueID: uniqueID,
                topic: notification.topic,
                priority: notification.priority, expiration: notification.expiration,
                collapseID: notification.collapseID, pushType: notification.pushType,
                authenticatedAs: notification.authenticatedAs, providerKeyID: notification.providerKeyID,
                providerTokenFingerprint: notification.providerKeyID == nil ? nil
                    : request.header("authorization").map(Self.tokenFingerprint),
                connectionID: connectionID,
                streamID: request.streamID)
            if state.configuration.recordNotifications { state.records.withLock { $0.append(record) } }
            if observe, let observer = state.observer.withLock({ $0.call }) { observer(record) }
        }
        return .respond(status: 200, headers: answerHeaders(apnsID: apnsID, uniqueID: uniqueID), body: [])
    }

    /// APNs' `apns-unique-id`: on every answer of the development
    /// environment, none in production (Apple, "Handling notification
    /// responses from APNs": an identifier only the development environment
    /// gives, to look the notification up in the Push Notifications
    /// Console's delivery log). A fresh UUID per answer, lowercase as in
    /// Apple's examples.
    private func makeUniqueID() -> String? {
        guard state.configuration.environment == .development else { return nil }
        return UUIDKey.random(using: &random).text.lowercased()
    }

    /// `apns-id`, then `apns-unique-id` when there is one.
    private func answerHeaders(apnsID: String, uniqueID: String?) -> [(name: String, value: String)] {
        guard let uniqueID else { return [("apns-id", apnsID)] }
        return [("apns-id", apnsID), ("apns-unique-id", uniqueID)]
    }

    /// The first 8 bytes of the SHA-256 of an `authorization` value, in hex.
    static func tokenFingerprint(_ authorization: String) -> String {
        SHA256.hash(Array(authorization.utf8)).prefix(8).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The client's apns-id when it is a UUID, else a new one (Apple always
    /// answers with an apns-id).
    private func echoedID(_ given: String?) -> String {
        if let given, UUIDKey(given[...].utf8) != nil { return given }
        return UUIDKey.random(using: &random).text
    }

    private func reject(_ rejection: APNsRejection, apnsID: String, now: Int, retryAfter: Int? = nil) -> Decision {
        state.rejected.wrappingAdd(1, ordering: .relaxed)
        var body = "{\"reason\":\"" + rejection.reason.rawValue + "\""
        // Apple: 410 carries the time (ms) the token stopped being valid.
        if rejection.status == 410 { body += ",\"timestamp\":\(now * 1000)" }
        body += "}"
        var headers = answerHeaders(apnsID: apnsID, uniqueID: makeUniqueID())
        headers.append(("content-type", "application/json"))
        if let retryAfter { headers.append(("retry-after", String(retryAfter))) }
        return .respond(status: rejection.status, headers: headers, body: Array(body.utf8))
    }
}
