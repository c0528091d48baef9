import HTTP2

// What the nghttp2 session reports to a pool's connection, inside `receive`
// and `takeOutput`: recorded only (answers, closed streams, room), and
// handed to the owner once the session call has returned.

extension HTTP2Connection: HTTP2ClientSessionDelegate {
    func session(_ session: HTTP2ClientSession, didReceiveResponse status: Int,
                 fields: HTTP2HeaderFields, streamID: Int32) {
        guard let request = streams[streamID] else { return }
        request.status = status
        request.readResponseFields(fields)
    }

    func session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        guard let request = streams[streamID] else { return }
        let room = request.maxAnswerBodyBytes - request.body.count
        if room > 0 { request.body.append(contentsOf: bytes.prefix(room)) }
    }

    func session(_ session: HTTP2ClientSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
        guard let request = streams.removeValue(forKey: streamID) else { return }
        capacityChanged = true
        if errorCode == .refusedStream {
            // RFC 9113 §8.7: not processed, safe to send again.
            unprocessedRequests.append(request)
            return
        }
        guard errorCode == .noError, let status = request.status else {
            let reason = errorCode == .noError ? "stream ended without a response" : "stream reset: \(errorCode)"
            finishedRequests.append((request, .failed(.streamFailed(reason))))
            return
        }
        finishedRequests.append((request, .answered(status: status)))
    }

    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32) {
        capacityChanged = true
        handle { $0.settingsReceived(into: &$1) }
    }

    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32,
                 errorCode: HTTP2ErrorCode, debugData: String) {
        var actions: [HTTP2ConnectionMachine.Action] = []
        machine.goAwayReceived(into: &actions)
        if case .close = actions.last {
            // A close decided here waits until `receive` returns (tearDown
            // frees the session, which must not happen inside its own callback).
            loop.schedule(after: .zero) { [weak self] in self?.perform(actions) }
        } else {
            perform(actions)
        }
    }

    func sessionConnectionWindowOpened(_ session: HTTP2ClientSession) {
        capacityChanged = true
    }

    func session(_ session: HTTP2ClientSession, didReceivePingAck payload: UInt64) {
        if let pingTimeoutTimer { loop.cancel(pingTimeoutTimer) }
        pingTimeoutTimer = nil
    }
}
