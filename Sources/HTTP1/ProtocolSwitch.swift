import EventLoop
import HTTPCore
import TLS

/// Another protocol a listener's connections may speak instead of HTTP/1.1
/// (HTTP/2 on the API port), chosen per connection: by ALPN on TLS, else by
/// the first bytes the client sends (a protocol whose clients open with a
/// fixed preface, as HTTP/2's do, RFC 9113 §3.4). HTTP1 knows only when to
/// switch; what the other protocol is stays in its own module.
public protocol ProtocolSwitch: Sendable {
    /// The ALPN protocol id that selects it (RFC 7301), e.g. `h2`.
    var alpnIdentifier: String { get }
    /// What its clients send first: a connection without ALPN whose first
    /// bytes are these switches; any other byte keeps HTTP/1.1.
    var preface: [UInt8] { get }
    /// The connection that takes over an accepted one (TLS handshake done,
    /// if any); the listener records it, then calls `start`.
    func makeConnection(_ handoff: ConnectionHandoff) -> any SwitchedConnection
}

/// An accepted connection as it is handed to another protocol, on its loop.
public struct ConnectionHandoff {
    public let socket: Socket
    /// The TLS connection, its handshake complete; nil for cleartext.
    public let tls: TLSConnection?
    public let loop: EventLoop
    /// Bytes already read from the client (the preface, and what followed).
    public let bufferedInput: [UInt8]
    public let handler: any HTTP1RequestHandler
    public let options: ListenerOptions
    public let counters: HTTP1ListenerCounters
    /// Told once when the connection closes (it stays counted until then).
    public let owner: any SwitchedConnectionOwner
}

/// A connection that switched protocol, as its listener sees it.
public protocol SwitchedConnection: AnyObject {
    /// Registers with its loop and processes `bufferedInput`; may close at
    /// once (reported to the owner like any close).
    func start()
    /// The relay stops: finish what is in flight, then close.
    func shutdown()
    /// Closes now (the grace period is over). Idempotent.
    func close()
}

/// Who keeps a switched connection's registration.
public protocol SwitchedConnectionOwner: AnyObject {
    func switchedConnectionClosed(_ connection: any SwitchedConnection)
}
