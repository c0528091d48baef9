import RelayCore

/// What the emulator does with one request instead of (or before) accepting it.
public enum APNsEmulatorAction: Sendable, Hashable {
    /// Answers `status` with `{"reason":"…"}` (410 also carries `timestamp`).
    case reject(status: Int, reason: APNsReason)
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

    public init(forcedAction: APNsEmulatorAction? = nil, forcedCount: Int? = nil,
                responseDelay: Duration = .zero, maxConcurrentStreams: UInt32 = 1000,
                initialMaxConcurrentStreams: UInt32? = nil, goAwayAfterStreams: Int? = nil,
                dropAfterStreams: Int? = nil, connectionWindowSize: Int? = nil) {
        self.forcedAction = forcedAction
        self.forcedCount = forcedCount
        self.responseDelay = responseDelay
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialMaxConcurrentStreams = initialMaxConcurrentStreams
        self.goAwayAfterStreams = goAwayAfterStreams
        self.dropAfterStreams = dropAfterStreams
        self.connectionWindowSize = connectionWindowSize
    }
}

/// How clients prove who they are.
public enum APNsEmulatorAuthentication: Sendable, Hashable {
    /// TLS client certificates signed by the CA in `caFile` are required;
    /// the allowed topic is the certificate's subject UID.
    case clientCertificate(caFile: String)
    /// `authorization: bearer <JWT>` (ES256) signed by one of these keys:
    /// header `kid` = its `keyID`, `iss` = its `teamID`, the key valid in the
    /// emulator's environment and (topic-specific keys) for the topic.
    case providerKeys([APNsEmulatorProviderKey])
    /// Both, per connection, as one APNs host serves certificate-based and
    /// token-based providers alike (one emulator per environment does both,
    /// for apps with certificates and apps with keys). A client certificate
    /// is requested, not required; one that is presented must be signed by
    /// a CA in `caFile` (else the handshake fails) and then rules the
    /// connection as in `clientCertificate`, its `authorization` headers
    /// ignored. A connection without one is held to `keys` as in `providerKeys`.
    case clientCertificateOrProviderKeys(caFile: String, keys: [APNsEmulatorProviderKey])
    /// Nothing checked (load generators such as h2load have no client certificate).
    case none

    /// What is checked, for the emulator's start-up line.
    var checks: String {
        switch self {
        case .clientCertificate: "client certificates"
        case .providerKeys(let keys): "provider tokens of \(keys.count) key(s)"
        case .clientCertificateOrProviderKeys(_, let keys):
            "client certificates, or provider tokens of \(keys.count) key(s) on connections without one"
        case .none: "no credentials"
        }
    }

    /// One team key valid in both environments for any topic.
    public static func token(publicKeyPEM: [UInt8], keyID: String, teamID: String) -> APNsEmulatorAuthentication {
        .providerKeys([APNsEmulatorProviderKey(keyID: keyID, teamID: teamID, publicKeyPEM: publicKeyPEM)])
    }
}

public struct APNsEmulatorConfiguration: Sendable {
    /// Numeric address to listen on (tests: 127.0.0.1).
    public var host: String
    /// 0 picks a free port: read `APNsEmulator.port` after `start()`.
    public var port: UInt16
    public var certificateFile: String
    public var privateKeyFile: String
    public var authentication: APNsEmulatorAuthentication
    /// The APNs environment the emulator plays: provider keys scoped to the
    /// other one are refused.
    public var environment: APNsEnvironment
    /// The app the device tokens belong to: another `apns-topic` is
    /// 400 DeviceTokenNotForTopic. nil: any topic the credentials allow.
    public var expectedTopic: String?
    /// Loop threads, each with its own SO_REUSEPORT listener.
    public var threads: Int
    /// Keep every accepted notification for `receivedNotifications()`.
    public var recordNotifications: Bool
    /// Connection-level events (accept, handshake failure, close) on stderr;
    /// never per request.
    public var log: Bool
    /// The behaviour at start (and after `reset()`).
    public var behavior: APNsEmulatorBehavior

    public init(host: String = "127.0.0.1", port: UInt16 = 0, certificateFile: String, privateKeyFile: String,
                authentication: APNsEmulatorAuthentication, environment: APNsEnvironment = .production,
                expectedTopic: String? = nil, threads: Int = 1,
                recordNotifications: Bool = false, log: Bool = false,
                behavior: APNsEmulatorBehavior = APNsEmulatorBehavior()) {
        self.host = host
        self.port = port
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.authentication = authentication
        self.environment = environment
        self.expectedTopic = expectedTopic
        self.threads = threads
        self.recordNotifications = recordNotifications
        self.log = log
        self.behavior = behavior
    }
}
