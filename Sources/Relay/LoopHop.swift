import HTTPCore
import EventLoop

/// Carries a handler and its request's completion to a Redis link's
/// thread and back: `run` calls `body` on the handler's loop (the handler
/// and the completion are confined to it). The box is `@unchecked
/// Sendable` because neither is touched anywhere but on that loop.
final class LoopHop<Handler: AnyObject>: @unchecked Sendable {
    private let handler: Handler
    private let completion: (HTTP1Response) -> Void
    private let loop: EventLoop

    init(_ handler: Handler, _ completion: @escaping (HTTP1Response) -> Void, loop: EventLoop) {
        self.handler = handler
        self.completion = completion
        self.loop = loop
    }

    private struct Carried: @unchecked Sendable {
        let body: (Handler, @escaping (HTTP1Response) -> Void) -> Void
    }

    func run(_ body: @escaping (Handler, @escaping (HTTP1Response) -> Void) -> Void) {
        guard !loop.isOnLoopThread else {
            body(handler, completion)
            return
        }
        let carried = Carried(body: body)
        loop.execute { carried.body(self.handler, self.completion) }
    }
}
