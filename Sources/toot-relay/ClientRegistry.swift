import APNs
import EventLoop

/// The APNs client of each loop, made on its loop before any listener and
/// touched only there: the loop's context sends through it, shutdown and
/// the connection gauges reach it.
final class ClientRegistry: @unchecked Sendable {
    let all: [(EventLoop, APNsClient)]

    init(loops: [EventLoop], configuration: APNsClientConfiguration) {
        all = loops.map { loop in
            (loop, loop.runAndWait { UnsafeTransfer(APNsClient(loop: loop, configuration: configuration)) }.value)
        }
    }

    /// The client of `loop`, one of the loops the registry was made for.
    func client(on loop: EventLoop) -> APNsClient {
        guard let entry = all.first(where: { $0.0 === loop }) else {
            preconditionFailure("ClientRegistry: a loop it was not made for")
        }
        return entry.1
    }
}
