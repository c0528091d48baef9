/// Waits for the deliveries of one provider API request (a gorush request's
/// tokens, a pyapns notify's list). Every call is on the loop thread (no
/// locking), and a sender never completes inside `send`, so the handler
/// sends all, then calls `whenDone` before any delivery can complete.
public final class DeliveryBatch<Failure> {
    private var remaining = 0
    public private(set) var failures: [Failure]
    private var finish: ((DeliveryBatch) -> Void)?

    /// `failures`: those known before anything was sent.
    public init(failures: [Failure] = []) {
        self.failures = failures
    }

    /// One more delivery is under way.
    public func begin() { remaining += 1 }

    /// A failure without a delivery (refused before sending).
    public func record(_ failure: Failure) { failures.append(failure) }

    /// Whether a delivery is under way (else the handler answers at once:
    /// it must never complete inside `handle`).
    public var isWaiting: Bool { remaining > 0 }

    /// Runs `finish` once, after the last delivery completes.
    public func whenDone(_ finish: @escaping (DeliveryBatch) -> Void) {
        precondition(remaining > 0, "DeliveryBatch: nothing to wait for")
        self.finish = finish
    }

    /// A delivery ended, with `failure` when it failed.
    public func complete(_ failure: Failure?) {
        if let failure { failures.append(failure) }
        precondition(remaining > 0, "DeliveryBatch: a delivery completed twice")
        remaining -= 1
        guard remaining == 0, let finish else { return }
        self.finish = nil
        finish(self)
    }
}
