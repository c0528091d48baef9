import EventLoop
import Glibc
import Observability

/// A part of the running relay that start-up starts and shutdown stops: a
/// listener, the event loops, their APNs clients, the fleet's links, the
/// feedback hook, the demo's emulator. Start-up appends each to one
/// `ServiceList` once it runs; shutdown goes through that list in reverse,
/// so what started later, and may use what started before it, stops first.
protocol Service: AnyObject {
    /// Shutdown's first pass: take no new work (a listener stops accepting),
    /// keep finishing what was taken.
    func stopAccepting()
    /// Whether the work taken before has finished: shutdown waits, within
    /// the grace period, until every service has.
    var isDrained: Bool { get }
    /// Shutdown's second pass, once every service drained or the grace
    /// period is over: end what is left and let go of what it holds.
    func stop(_ grace: GracePeriod)
    /// The daemon's tick, once a second on the main thread, given the unix
    /// time: the metrics and log lines of state kept elsewhere.
    func tick(now: Int)
}

extension Service {
    func stopAccepting() {}
    var isDrained: Bool { true }
    func stop(_ grace: GracePeriod) {}
    func tick(now: Int) {}
}

/// SHUTDOWN_GRACE, as the second pass sees it: its end, and whether a
/// second SIGTERM or SIGINT cut the wait short ("now").
struct GracePeriod: Sendable {
    /// Monotonic nanoseconds (`EventLoop.monotonicNanoseconds`).
    let deadline: UInt64
    var cutShort = false
}

/// The running services in the order they started. Shutdown
/// (`shutDown(grace:)`) is two passes over it in reverse with a wait
/// between: every service stops accepting; the wait lasts until all have
/// drained, the grace period ends, or a second signal comes; then every
/// service stops. So the listeners stop accepting before anything else
/// stops, in-flight work has the whole grace period, and what the
/// listeners' work needs (APNs clients, loops, the feedback hook, the
/// fleet's links, the demo's emulator) stops after them, each after what
/// started after it.
final class ServiceList {
    private var services: [any Service] = []
    private let logger: Logger
    /// Waits up to the duration for a second SIGTERM or SIGINT.
    private let interruption: (Duration) -> Int32?

    init(logger: Logger,
         interruption: @escaping (Duration) -> Int32? = { waitForBlockedSignal([SIGTERM, SIGINT], timeout: $0) }) {
        self.logger = logger
        self.interruption = interruption
    }

    /// Adds a service that has started: it stops before every one added
    /// before it.
    func append(_ service: any Service) {
        services.append(service)
    }

    var count: Int { services.count }

    func tick(now: Int) {
        for service in services { service.tick(now: now) }
    }

    /// Stops every service, the last started first (see the type). At start
    /// up, a failure stops what already started with a grace of zero.
    func shutDown(grace: Duration) {
        var period = GracePeriod(deadline: EventLoop.deadline(after: grace, from: EventLoop.monotonicNanoseconds()))
        let running = services.reversed()
        services = []
        for service in running { service.stopAccepting() }
        while !running.allSatisfy(\.isDrained) && EventLoop.monotonicNanoseconds() < period.deadline {
            // A second SIGTERM/SIGINT means "now": skip the rest of the grace.
            if let again = interruption(.milliseconds(10)) {
                logger.warning("\(again == SIGTERM ? "SIGTERM" : "SIGINT") again: not waiting for the grace period")
                period.cutShort = true
                break
            }
        }
        for service in running { service.stop(period) }
    }
}

/// A service made of the functions that stop it (and, if any, tick): for
/// what the daemon starts with functions of its own (the fleet's links,
/// the feedback hook, the event loops, the demo's emulator).
final class ServiceSteps: Service {
    private let onStopAccepting: () -> Void
    private let onStop: (GracePeriod) -> Void
    private let onTick: (Int) -> Void

    init(stopAccepting: @escaping () -> Void = {}, stop: @escaping (GracePeriod) -> Void = { _ in },
         tick: @escaping (Int) -> Void = { _ in }) {
        onStopAccepting = stopAccepting
        onStop = stop
        onTick = tick
    }

    func stopAccepting() { onStopAccepting() }
    func stop(_ grace: GracePeriod) { onStop(grace) }
    func tick(now: Int) { onTick(now) }
}
