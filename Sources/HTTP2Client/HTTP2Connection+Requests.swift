import HTTP2

// The requests handed to a pool's connection: submitted to its session as
// streams, or cancelled when their answer is late.

extension HTTP2Connection {
    enum SubmitResult: Equatable {
        case submitted(streamID: Int32)
        /// The session takes no new stream (GOAWAY raced in): try elsewhere.
        case refused
        /// The request itself cannot go over HTTP/2 (a header it forbids):
        /// the server never saw it and no other connection would take it.
        case unsendable(String)
    }

    /// Hands `request` to the session.
    func submit(_ request: PooledRequest) -> SubmitResult {
        guard machine.state == .ready, let session else { return .refused }
        var authorization: String?
        if let authorizer = endpoint.authorizer {
            let (value, stamp) = authorizer.authorization()
            authorization = value
            request.authorizationStamp = stamp
        }
        let streamID: Int32
        do {
            streamID = try request.submit(on: session, authority: endpoint.authority, authorization: authorization)
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
