/// How large a reply the relay accepts from Redis. hiredis' reader has no
/// such limit: it waits for a bulk string or a line however long the
/// server says it is, buffering what arrives, and allocates an array's
/// element pointers as soon as it reads the count (measured with Debian's
/// hiredis 0.14.1: the 13 bytes `*2147483647\r\n` allocate 16 GiB of
/// address space). A hostile or broken server, or a byte stream that is
/// not Redis, must not grow the relay without end: past either limit the
/// reply is a protocol error and the connection is dropped.
///
/// Nesting is hiredis' own limit: arrays in arrays at most 7 deep (its
/// reader's task stack), beyond which it reports a protocol error; the
/// deepest reply the relay reads, XREADGROUP's (streams, stream, entries,
/// entry, fields), is 5 deep.
public struct RedisReplyLimits: Equatable, Sendable {
    /// Bytes of one reply on the wire, from its type byte to its last
    /// CRLF: also what waits in the reader's buffer for it to complete.
    public var maxBytes: Int
    /// Elements of one reply, every array's count added up, checked when
    /// the count is read, before anything is allocated for it.
    public var maxElements: Int

    /// 64 MiB and 1,048,576 elements: a whole feedback list of
    /// FEEDBACK_MAX's largest setting (1,000,000 tokens) fits, and so do
    /// Redis' own limits for what the relay stores (a provisioned app's
    /// certificate and key are a few KB). At the element limit, hiredis'
    /// tree and its copy cost about 170 bytes an element for the moment of
    /// one reply (measured: 1,048,576 bulk strings of 8 bytes, 14 MiB on
    /// the wire, raised the peak RSS by 170 MB in a debug build).
    public static let `default` = RedisReplyLimits(maxBytes: 64 << 20, maxElements: 1 << 20)

    public init(maxBytes: Int, maxElements: Int) {
        precondition(maxBytes > 0 && maxElements > 0, "RedisReplyLimits: limits must be positive")
        self.maxBytes = maxBytes
        self.maxElements = maxElements
    }
}
