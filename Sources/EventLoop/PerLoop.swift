/// One value per loop of a group, each made on its own loop before anything
/// runs there and touched only there afterwards (the loop's APNs client, its
/// handlers' shared context). Never changed after it is made, so any thread
/// may look a loop's value up to hand it to that loop.
public final class PerLoop<Value>: @unchecked Sendable {
    /// Each loop with its value, in the order of the loops given.
    public let all: [(loop: EventLoop, value: Value)]

    /// One value per loop of `loops`, made on that loop by `make`.
    public init(loops: [EventLoop], make: @escaping (EventLoop) -> Value) {
        all = loops.map { loop in (loop, loop.runAndWait { Unchecked(make(loop)) }.value) }
    }

    /// The value of `loop`, one of the loops it was made for.
    public func value(on loop: EventLoop) -> Value {
        guard let entry = all.first(where: { $0.loop === loop }) else {
            preconditionFailure("PerLoop: a loop it was not made for")
        }
        return entry.value
    }

    /// Runs `body` with each loop's value, on that loop, and waits.
    public func forEach(_ body: @escaping (Value) -> Void) {
        for (loop, value) in all {
            let box = Unchecked(value)
            loop.runAndWait { body(box.value) }
        }
    }

    /// A value crossing to the loop that alone uses it.
    private struct Unchecked: @unchecked Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
}
