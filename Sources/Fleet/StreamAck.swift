import Feedback

/// One entry of a `StreamQueue` done, as its acknowledgement carries it:
/// its id, and the dead token its end named, if any, which the
/// acknowledgement appends to the app's feedback list in the same script
/// (`StreamQueue.ackScript`): the entry leaves the stream only with its
/// feedback in Redis, so an instance killed after the acknowledgement
/// loses none, and an acknowledgement sent again appends nothing more.
public struct StreamAck: Equatable, Sendable {
    public var id: String
    public var feedback: Feedback?

    public init(id: String, feedback: Feedback? = nil) {
        (self.id, self.feedback) = (id, feedback)
    }

    /// A dead token for the app's list, with this instance's store: its
    /// `maxPerApp` (FEEDBACK_MAX) bounds the list in Redis as the flusher's
    /// writes do, it counts what the trim drops, and it takes the entry back
    /// when Redis refuses the append (the flusher then writes it).
    public struct Feedback: Equatable, Sendable {
        public var entry: FeedbackEntry
        public let store: FeedbackStore

        public init(entry: FeedbackEntry, store: FeedbackStore) {
            (self.entry, self.store) = (entry, store)
        }

        public static func == (left: Feedback, right: Feedback) -> Bool {
            left.entry == right.entry && left.store === right.store
        }
    }
}
