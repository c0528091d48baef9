import HTTP2
import TLS

// The byte pump between one nghttp2 session and one OpenSSL connection, used
// by both ends of the project's HTTP/2 (the APNs client's connections and
// the emulator's): frames taken from the session are written through OpenSSL
// up to a high-water mark, and what OpenSSL decrypts is fed to the session
// in passes bounded for fairness. Its own module because HTTP2 knows no TLS
// and TLS no HTTP/2 (C stays at the edge: each of those two imports one C
// library); neither the client nor the emulator is the other's home.
//
// Hot path (every notification passes here twice): no closure, allocation or
// existential call per read or write. The session and the host are generic
// parameters and the methods `@inlinable`, so each caller gets a copy
// specialized to its concrete (final) session and host types.

/// What the owner of a pump tells it, asked synchronously inside a pass.
public protocol HTTP2TLSPumpHost: AnyObject {
    /// Checked before each read: false ends the read pass (the host closed,
    /// or decided to drop the connection after the request just read).
    var keepsReading: Bool { get }
    /// Frames were taken from the session; they begin at `offset` among all
    /// the bytes this pump ever took (the client's resend accounting).
    func framesSerialized(at offset: UInt64)
}

/// Why a write pass stopped.
public enum HTTP2TLSWriteStop: Equatable {
    /// Everything the session had (up to the high-water mark) was written.
    case flushed
    /// The socket is full: write again once it is writable.
    case wantWrite
    /// OpenSSL must read first (renegotiation, key update).
    case wantRead
    /// The peer closed the connection.
    case closed
    case failed(TLSError)
}

/// Why a read pass stopped.
public enum HTTP2TLSReadStop: Equatable {
    /// Nothing more to read now.
    case wantRead
    /// OpenSSL needs the socket writable to finish a read (TLS 1.3 key update).
    case wantWrite
    /// The peer closed the connection (close_notify, or EOF without it).
    case closed
    /// The transport failed (a reset, typically).
    case failed(TLSError)
    /// The peer broke HTTP/2; the session queued a GOAWAY (still to write).
    case protocolError(HTTP2Error)
    /// `keepsReading` turned false.
    case stoppedByHost
    /// The pass read its bound. `moreBuffered`: OpenSSL holds input epoll
    /// will not announce (a record already read from the socket), so the
    /// host must come back for it on its own.
    case yielded(moreBuffered: Bool)
}

/// The outcome of one read pass.
public struct HTTP2TLSReadPass: Equatable {
    public var stop: HTTP2TLSReadStop
    /// At least one read returned bytes (the connection showed life).
    public var receivedBytes: Bool

    @inlinable
    public init(stop: HTTP2TLSReadStop, receivedBytes: Bool) {
        self.stop = stop
        self.receivedBytes = receivedBytes
    }
}

/// Serialized HTTP/2 frames not yet taken by OpenSSL, and the pump that moves
/// them; also the read pass (it keeps no state for reading).
public struct HTTP2TLSPump {
    /// `output[sent...]` waits for OpenSSL.
    @usableFromInline var output: [UInt8] = []
    @usableFromInline var sent = 0
    /// Stop taking frames from the session beyond this many pending bytes
    /// (back-pressure: the rest waits inside nghttp2 until the socket takes more).
    public let highWater: Int
    /// An emptied buffer keeps its storage up to this capacity.
    @usableFromInline let keptCapacity: Int
    /// Bytes ever taken from the session, and ever accepted by OpenSSL. A TLS
    /// record is written whole or retried whole: a partial record on the wire
    /// cannot be decrypted, so it cannot be processed. Whatever begins at or
    /// beyond `writtenTotal` never reached the peer (RFC 9113 §6.8: resend
    /// safety when a connection dies).
    @inlinable public var serializedTotal: UInt64 { serialized }
    @inlinable public var writtenTotal: UInt64 { written }
    @usableFromInline var serialized: UInt64 = 0
    @usableFromInline var written: UInt64 = 0

    public init(highWater: Int, keptCapacity: Int) {
        self.highWater = highWater
        self.keptCapacity = keptCapacity
    }

    /// Bytes taken from the session and not yet accepted by OpenSSL.
    @inlinable
    public var pendingBytes: Int { output.count - sent }

    /// Takes frames from the session and writes them through OpenSSL until
    /// the socket is full or nothing is left.
    @inlinable
    public mutating func write<Session: HTTP2Session, Host: HTTP2TLSPumpHost>(
        _ session: Session, through tls: TLSConnection, host: Host
    ) -> HTTP2TLSWriteStop {
        while true {
            if sent == output.count {
                output.removeAll(keepingCapacity: output.capacity <= keptCapacity)
                sent = 0
            }
            if output.count - sent < highWater { take(session, host: host) }
            guard sent < output.count else { return .flushed }
            let offset = sent
            let result = output.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch result {
            case .bytes(let count):
                sent += count
                written += UInt64(count)
            case .wantWrite:
                return .wantWrite
            case .wantRead:
                return .wantRead
            case .closed:
                return .closed
            case .failed(let error):
                return .failed(error)
            }
        }
    }

    /// At an orderly close: the last frames (and whatever is still pending)
    /// in one write, best effort; then the buffer is released.
    public mutating func writeLast<Session: HTTP2Session, Host: HTTP2TLSPumpHost>(
        _ session: Session, through tls: TLSConnection, host: Host
    ) {
        take(session, host: host)
        if sent < output.count {
            let offset = sent
            _ = output.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
        }
        discardOutput()
    }

    /// Drops what was not written (the connection is gone).
    public mutating func discardOutput() {
        output = []
        sent = 0
    }

    /// Takes the session's frames into `output`, telling the host where they
    /// begin.
    @inlinable @inline(__always)
    mutating func take<Session: HTTP2Session, Host: HTTP2TLSPumpHost>(_ session: Session, host: Host) {
        let before = output.count
        session.takeOutput(into: &output)
        let added = output.count - before
        guard added > 0 else { return }
        host.framesSerialized(at: serialized)
        serialized += UInt64(added)
    }

    /// Reads and feeds the session until OpenSSL has nothing more, the host
    /// stops, or `maxReads` reads (fairness: level-triggered epoll calls
    /// again for bytes left in the socket, but not for bytes already inside
    /// OpenSSL, hence `moreBuffered`).
    @inlinable
    public static func readAndFeed<Session: HTTP2Session, Host: HTTP2TLSPumpHost>(
        _ session: Session, from tls: TLSConnection, into buffer: UnsafeMutableRawBufferPointer,
        maxReads: Int, host: Host
    ) -> HTTP2TLSReadPass {
        var receivedBytes = false
        var reads = 0
        while true {
            guard host.keepsReading else { return HTTP2TLSReadPass(stop: .stoppedByHost, receivedBytes: receivedBytes) }
            guard reads < maxReads else {
                // With read-ahead, records OpenSSL already holds are invisible
                // to epoll (a partial record alone waits for the socket, which
                // epoll does announce).
                return HTTP2TLSReadPass(stop: .yielded(moreBuffered: tls.hasUnprocessedInput),
                                        receivedBytes: receivedBytes)
            }
            reads += 1
            let stop: HTTP2TLSReadStop
            switch tls.read(into: buffer) {
            case .bytes(let count):
                receivedBytes = true
                guard let error = feed(session, UnsafeRawBufferPointer(rebasing: buffer[0..<count])) else { continue }
                stop = .protocolError(error)
            case .wantRead:
                stop = .wantRead
            case .wantWrite:
                stop = .wantWrite
            case .closed:
                stop = .closed
            case .failed(let error):
                stop = .failed(error)
            }
            return HTTP2TLSReadPass(stop: stop, receivedBytes: receivedBytes)
        }
    }

    /// Not a closure: Swift 6.3.1 crashes compiling a `throws(HTTP2Error)`
    /// closure passed to `withUnsafeBytes`.
    @inlinable
    static func feed<Session: HTTP2Session>(_ session: Session, _ bytes: UnsafeRawBufferPointer) -> HTTP2Error? {
        do {
            try session.receive(bytes)
            return nil
        } catch {
            return error
        }
    }
}
