/// What both roles share: one nghttp2 session driven by bytes in and bytes
/// out (ARCHITECTURE.md §4: protocol code does no I/O; the caller moves the bytes).
///
/// Not thread-safe: use it from one thread (its event loop).
public class HTTP2Session {
    let core: NGHTTP2Session

    init(core: NGHTTP2Session) {
        self.core = core
    }

    /// Processes bytes read from the connection; delegate callbacks run inside.
    /// Throws when the peer broke the protocol (bad preface, bad frame, …);
    /// the session then queues a GOAWAY, still handed out by `takeOutput`,
    /// and is dead.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2Error) {
        try core.receive(bytes)
    }

    /// Appends every byte waiting to be sent (the frames nghttp2 serializes
    /// now) to `buffer`; cheap when nothing is pending.
    public func takeOutput(into buffer: inout [UInt8]) {
        core.takeOutput(into: &buffer)
    }

    /// False once the session is done reading: after a GOAWAY exchange with no
    /// stream left, after `terminate`, or after a failure. When both this and
    /// `wantsWrite` are false, close the connection.
    public var wantsRead: Bool { core.wantsRead }

    /// True while `takeOutput` has bytes to hand out.
    public var wantsWrite: Bool { core.hasPendingOutput }

    /// Why the session died, if it did.
    public var failure: HTTP2Error? { core.failure }
}
