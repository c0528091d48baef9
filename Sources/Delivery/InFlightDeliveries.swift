import Synchronization

/// The notifications in flight (sent to APNs, not yet answered) against
/// `MAX_IN_FLIGHT`, shared by every event loop of a listener, lock-free:
/// beyond the cap a push is answered 503 at once.
/// (What APNs says of the credentials is each app's: `AppHealth`.)
public final class InFlightDeliveries: Sendable {
    public let maxInFlight: Int
    private let count = Atomic<Int>(0)

    public init(maxInFlight: Int) {
        self.maxInFlight = maxInFlight
    }

    public var inFlight: Int { count.load(ordering: .relaxed) }

    /// Reserves a slot for a notification; false (and not reserved) beyond the cap.
    /// Add first, undo if over: one atomic operation on the common path.
    public func beginDelivery() -> Bool {
        if count.wrappingAdd(1, ordering: .relaxed).newValue > maxInFlight {
            count.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    public func endDelivery() {
        count.wrappingSubtract(1, ordering: .relaxed)
    }
}
