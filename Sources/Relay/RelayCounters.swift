import Synchronization

/// State shared by every event loop of the relay, lock-free.
///
/// - `openConnections` against `MAX_CONNECTIONS` (beyond: accept and close);
/// - `inFlight` against `MAX_IN_FLIGHT` (beyond: 503).
/// (What APNs says of the credentials is each app's: `AppHealth`.)
public final class RelayCounters: Sendable {
    public let maxConnections: Int
    public let maxInFlight: Int
    private let connections = Atomic<Int>(0)
    private let inFlightCount = Atomic<Int>(0)
    private let answered = Atomic<Int>(0)

    public init(maxConnections: Int, maxInFlight: Int) {
        self.maxConnections = maxConnections
        self.maxInFlight = maxInFlight
    }

    public var openConnections: Int { connections.load(ordering: .relaxed) }
    public var inFlight: Int { inFlightCount.load(ordering: .relaxed) }
    /// Requests handed to the relay since start (parse errors excluded).
    public var requestsAnswered: Int { answered.load(ordering: .relaxed) }

    /// Counts a new connection; false (and not counted) beyond the cap.
    public func openConnection() -> Bool {
        Self.increment(connections, upTo: maxConnections)
    }

    public func closeConnection() {
        connections.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Reserves a slot for a notification; false (and not reserved) beyond the cap.
    public func beginDelivery() -> Bool {
        Self.increment(inFlightCount, upTo: maxInFlight)
    }

    public func endDelivery() {
        inFlightCount.wrappingSubtract(1, ordering: .relaxed)
    }

    public func recordAnswer() {
        answered.wrappingAdd(1, ordering: .relaxed)
    }

    /// Adds one unless that would pass `cap` (then leaves it as it was).
    /// Add first, undo if over: one atomic operation on the common path.
    private static func increment(_ counter: borrowing Atomic<Int>, upTo cap: Int) -> Bool {
        let now = counter.wrappingAdd(1, ordering: .relaxed).newValue
        if now > cap {
            counter.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }
}
