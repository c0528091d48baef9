/// What one HTTP/2 connection of a listener may make the relay hold or do,
/// beyond the listener's own limits (`ListenerOptions`: header list =
/// MAX_HEADER_BYTES, body = the listener's body limit, its timeouts).
public struct HTTP2ServerLimits: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §6.5.2). 100: the smallest
    /// value the RFC recommends (§5.1.2), and what nghttp2, h2o and most
    /// servers announce. APNs announces 1000, but each stream may hold a
    /// request body, its headers and an answer in progress: 100 bounds one
    /// connection to 100 × (body + header limits) while a client still keeps
    /// 100 notifications in flight per connection (they wait on APNs, not
    /// on this connection), and a client wanting more opens connections.
    public var maxConcurrentStreams: UInt32
    /// Rapid reset (CVE-2023-44487): the RST_STREAM frames a client may
    /// send for streams it opened, a burst of `resetBurst` and then
    /// `resetsPerSecond`; beyond, GOAWAY ENHANCE_YOUR_CALM and the
    /// connection closes. A client that cancels a request now and then
    /// (a timeout) never comes near it.
    public var resetBurst: Int
    public var resetsPerSecond: Int
    /// Frames waiting for a peer that does not read: beyond this many bytes
    /// no more are taken from the session and no more input is read (the
    /// rest of the answers wait inside nghttp2, bounded by the streams).
    public var outputHighWater: Int
    /// Our connection-level receive window (RFC 9113 §6.9.2): room for
    /// many concurrent request bodies before the client waits for a
    /// WINDOW_UPDATE.
    public var connectionWindow: Int

    public init(maxConcurrentStreams: UInt32 = 100, resetBurst: Int = 100, resetsPerSecond: Int = 10,
                outputHighWater: Int = 256 * 1024, connectionWindow: Int = 1 << 20) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.resetBurst = resetBurst
        self.resetsPerSecond = resetsPerSecond
        self.outputHighWater = outputHighWater
        self.connectionWindow = connectionWindow
    }
}
