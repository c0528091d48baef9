import HTTP2

// The requests handed to an APNs connection: submitted to its session as
// streams, or cancelled when their answer is late.

extension APNsConnection {
    enum SubmitResult: Equatable {
        case submitted(streamID: Int32)
        /// The session takes no new stream (GOAWAY raced in): try elsewhere.
        case refused
        /// The request itself cannot go over HTTP/2 (a header it forbids):
        /// APNs never saw it and no other connection would take it.
        case unsendable(String)
    }

    /// Hands `request` to the session.
    func submit(_ request: PooledNotification) -> SubmitResult {
        guard machine.state == .ready, let session else { return .refused }
        var authorization: String?
        if let provider = endpoint.tokenProvider {
            let (value, issuedAt) = provider.currentAuthorization(now: endpoint.wallClock())
            authorization = value
            request.tokenIssuedAt = issuedAt
        }
        let streamID: Int32
        do {
            streamID = try session.submitRequest(
                method: "POST", path: request.notification.path, authority: endpoint.authority,
                fields: APNsRequestFields(headers: request.notification.headers, authorization: authorization),
                body: request.notification.payload)
        } catch {
            if case .invalidUse(let reason) = error { return .unsendable(reason) }
            return .refused
        }
        request.earliestWireOffset = nil
        streams[streamID] = request
        unserialized.append(request)
        scheduleFlush()
        return .submitted(streamID: streamID)
    }

    /// The answer timeout fired: reset the stream; a late answer is ignored.
    func cancel(streamID: Int32) {
        guard streams.removeValue(forKey: streamID) != nil else { return }
        try? session?.submitRSTStream(id: streamID, errorCode: .cancel)
        scheduleFlush()
        checkDrained()
    }
}
