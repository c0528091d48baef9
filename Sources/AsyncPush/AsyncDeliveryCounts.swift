import Synchronization

/// The asynchronous notifications' counts over the process: the gauges
/// and counters of `toot_relay_api_async_*`. Lock-free, shared by every
/// loop's queue.
public final class AsyncDeliveryCounts: Sendable {
    private let inFlightCount = Atomic<Int>(0)
    private let deliveredCount = Atomic<Int>(0)
    private let failedCount = Atomic<Int>(0)
    private let retriedCount = Atomic<Int>(0)

    public init() {}

    /// Tries sent to APNs, not yet answered.
    public var inFlight: Int { inFlightCount.load(ordering: .relaxed) }
    /// Notifications APNs accepted.
    public var delivered: Int { deliveredCount.load(ordering: .relaxed) }
    /// Notifications done without APNs' acceptance (refused, expired, tries
    /// spent, or left at exit).
    public var failed: Int { failedCount.load(ordering: .relaxed) }
    /// Tries scheduled again.
    public var retried: Int { retriedCount.load(ordering: .relaxed) }

    func add(inFlight: Int) { inFlightCount.wrappingAdd(inFlight, ordering: .relaxed) }
    func countDelivered() { deliveredCount.wrappingAdd(1, ordering: .relaxed) }
    public func countFailed(_ count: Int = 1) { failedCount.wrappingAdd(count, ordering: .relaxed) }
    public func countRetried() { retriedCount.wrappingAdd(1, ordering: .relaxed) }
}
