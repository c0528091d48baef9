/// What a connection tells its pool. Called on the loop thread, never from
/// inside an nghttp2 callback.
protocol HTTP2ConnectionOwner: AnyObject {
    /// The server's SETTINGS arrived, or a stream finished: new streams may fit.
    func connectionHasCapacity(_ connection: HTTP2Connection)
    /// The server sent GOAWAY: no new stream goes to this connection.
    func connectionIsDraining(_ connection: HTTP2Connection)
    /// A request ended (answer or stream failure).
    func connection(_ connection: HTTP2Connection, finished request: PooledRequest, with answer: PooledAnswer)
    /// The server provably never processed `requests` (REFUSED_STREAM, above
    /// GOAWAY's last-stream-id): send them again elsewhere.
    func connection(_ connection: HTTP2Connection, returnedUnprocessed requests: [PooledRequest])
    /// An idle connection sent a PING (RFC 9113 §6.7) to check the peer.
    func connectionSentPing(_ connection: HTTP2Connection)
    /// The connection is closed; `failure` nil for an orderly close. Its
    /// requests were already finished or returned.
    func connectionDidClose(_ connection: HTTP2Connection, failure: ConnectionFailure?, wasReady: Bool)
}
