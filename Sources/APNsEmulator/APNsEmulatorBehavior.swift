import APNsCore

/// What the emulator does with one request instead of (or before) accepting it.
public enum APNsEmulatorAction: Sendable, Hashable {
    /// Answers `status` with `{"reason":"…"}` (410 also carries `timestamp`).
    case reject(status: Int, reason: APNsReason)
    /// Answers as `reject` does, with `retry-after: seconds` (RFC 9110 §10.2.3).
    case rejectRetryingAfter(status: Int, reason: APNsReason, seconds: Int)
    /// Never answers: the client's answer timeout must fire.
    case noAnswer
    /// Resets the stream (RST_STREAM INTERNAL_ERROR) instead of answering.
    case resetStream
    /// Closes the TCP connection at once, without GOAWAY or TLS close_notify;
    /// answers already queued for earlier requests are flushed first.
    case dropConnection

    /// A rejection with the status Apple documents for `reason` (400 for an
    /// undocumented reason).
    public static func reject(_ reason: APNsReason) -> APNsEmulatorAction {
        .reject(status: reason.documentedStatus ?? 400, reason: reason)
    }
}

/// Behaviour that can change while the emulator runs (`APNsEmulator.update`).
public struct APNsEmulatorBehavior: Sendable, Hashable {
    /// Applied to every valid request (after validation and the token
    /// fault table) while set: to every request when `forcedCount` is nil,
    /// else to the next `forcedCount` requests, across all connections.
    public var forcedAction: APNsEmulatorAction?
    public var forcedCount: Int?
    /// Added before every answer (Apple's round trip is about 20 ms).
    public var responseDelay: Duration
    /// SETTINGS_MAX_CONCURRENT_STREAMS. Changing it at run time sends a new
    /// SETTINGS frame on every live connection (RFC 9113 §6.5.2).
    public var maxConcurrentStreams: UInt32
    /// When set, new connections first announce this value and raise it to
    /// `maxConcurrentStreams` once their first request arrives (APNs
    /// announces 1 until it has checked the provider token).
    public var initialMaxConcurrentStreams: UInt32?
    /// Per connection: after the N-th request, GOAWAY with last-stream-id =
    /// that request's stream; later streams are refused (REFUSED_STREAM) and
    /// the connection closes once the streams at or below it are answered.
    public var goAwayAfterStreams: Int?
    /// Per connection: the N-th request closes the TCP connection abruptly;
    /// it and any later request in the same read are not answered.
    public var dropAfterStreams: Int?
    /// The connection-level receive window new connections announce (by a
    /// WINDOW_UPDATE on stream 0); nil keeps the 65,535 bytes every HTTP/2
    /// connection starts with (RFC 9113 §6.9.2). Apple does not document
    /// what APNs uses, so the default is the tightest a client can meet.
    public var connectionWindowSize: Int?
    /// FCM: service-account keys (`private_key_id`) the token endpoint
    /// refuses as Google refuses a deleted key (400 invalid_grant "Invalid
    /// JWT Signature."); access tokens issued before stay good until they
    /// expire, as Google's do.
    public var fcmRevokedKeyIDs: Set<String>

    public init(forcedAction: APNsEmulatorAction? = nil, forcedCount: Int? = nil,
                responseDelay: Duration = .zero, maxConcurrentStreams: UInt32 = 1000,
                initialMaxConcurrentStreams: UInt32? = nil, goAwayAfterStreams: Int? = nil,
                dropAfterStreams: Int? = nil, connectionWindowSize: Int? = nil, fcmRevokedKeyIDs: Set<String> = []) {
        self.forcedAction = forcedAction
        self.forcedCount = forcedCount
        self.responseDelay = responseDelay
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialMaxConcurrentStreams = initialMaxConcurrentStreams
        self.goAwayAfterStreams = goAwayAfterStreams
        self.dropAfterStreams = dropAfterStreams
        self.connectionWindowSize = connectionWindowSize
        self.fcmRevokedKeyIDs = fcmRevokedKeyIDs
    }
}
