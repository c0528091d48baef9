/// The seam between the relay and the APNs client: the relay hands a built
/// notification to a sender that lives on the same event loop, and gets the
/// outcome back on that loop.
///
/// Contract (every implementation, real or fake):
/// - `send` is called on the sender's event-loop thread;
/// - `completion` runs exactly once, on that same thread, never inside the
///   `send` call itself (so callers never see re-entrant completions);
/// - a notification is accepted by APNs at most once per `send`: a sender may
///   resend a stream APNs provably never processed (GOAWAY above
///   last-stream-id, REFUSED_STREAM), never one it may have processed.
public protocol NotificationSender: AnyObject {
    func send(_ notification: APNsNotification, completion: @escaping (DeliveryOutcome) -> Void)
}
