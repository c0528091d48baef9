/// What the pool machine asks of its connections, at the moment it decides.
///
/// Asked, not passed in with each event: whether a connection takes a
/// request depends on nghttp2's stream count and the server's flow-control
/// window, which every submit, frame read and WINDOW_UPDATE changes; a copy
/// handed in with the event would be stale after the first submit of a batch.
/// `HTTP2Pool` answers from its `HTTP2Connection`s; tests answer from a table.
protocol HTTP2PoolConnections {
    /// The connection's state now. A connection the machine has just asked
    /// to open and the pool has not made yet is `idle`, as a new one is.
    func state(of connection: HTTP2PoolMachine.ConnectionID) -> HTTP2ConnectionState
    /// Whether a request with `bodyBytes` of body should go there now: a
    /// free stream and room in the server's connection flow-control window
    /// (`HTTP2Connection.canTake`).
    ///
    /// A connection that refused a body refuses one as large until the
    /// machine is told of a change by an event other than a submit's result:
    /// a submit changes only the connection it went to, which then has fewer
    /// streams and less window, never more. A dispatch pass relies on it
    /// (`connectionInPass(taking:_:)`).
    func canTake(_ connection: HTTP2PoolMachine.ConnectionID, bodyBytes: Int) -> Bool
    /// The same two questions about the connection at `position` in the
    /// machine's list of open connections (oldest first). The pool keeps its
    /// connections in that order too, so it finds the connection there
    /// without a search: the machine asks about every connection for every
    /// request it places (callgrind: the searches cost about 200
    /// instructions per notification at 4 connections). The answers are the
    /// id-based ones, which a view without positions gives by default.
    func state(of connection: HTTP2PoolMachine.ConnectionID, at position: Int) -> HTTP2ConnectionState
    func canTake(_ connection: HTTP2PoolMachine.ConnectionID, at position: Int, bodyBytes: Int) -> Bool
}

extension HTTP2PoolConnections {
    func state(of connection: HTTP2PoolMachine.ConnectionID, at position: Int) -> HTTP2ConnectionState {
        state(of: connection)
    }

    func canTake(_ connection: HTTP2PoolMachine.ConnectionID, at position: Int, bodyBytes: Int) -> Bool {
        canTake(connection, bodyBytes: bodyBytes)
    }
}
