import Synchronization

/// A listener's connections against `MAX_CONNECTIONS` (beyond: accepted and
/// closed at once) and the requests it handed to its handlers, shared by
/// every event loop of the listener, lock-free.
public final class HTTP1ListenerCounters: Sendable {
    public let maxConnections: Int
    private let connections = Atomic<Int>(0)
    private let answered = Atomic<Int>(0)

    public init(maxConnections: Int) {
        self.maxConnections = maxConnections
    }

    public var openConnections: Int { connections.load(ordering: .relaxed) }
    /// Requests handed to the handlers since start (refusals excluded).
    public var requestsAnswered: Int { answered.load(ordering: .relaxed) }

    /// Counts a new connection; false (and not counted) beyond the cap.
    /// Add first, undo if over: one atomic operation on the common path.
    public func openConnection() -> Bool {
        if connections.wrappingAdd(1, ordering: .relaxed).newValue > maxConnections {
            connections.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    public func closeConnection() {
        connections.wrappingSubtract(1, ordering: .relaxed)
    }

    public func recordAnswer() {
        answered.wrappingAdd(1, ordering: .relaxed)
    }
}
