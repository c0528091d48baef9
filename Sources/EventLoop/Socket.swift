import CEventLoop
import Glibc

/// A failed socket call: which operation and its `errno`.
public struct SocketError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Operation: String, Sendable {
        case socket, setOption, bind, listen, accept, connect, shutdown
        case read, write, address, resolve
    }
    public let operation: Operation
    /// The `errno` of the call. For `.resolve` failing inside getaddrinfo it
    /// is the (negative) `EAI_*` code instead; see `description`.
    public let errno: Int32

    public init(_ operation: Operation, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    /// EMFILE/ENFILE/ENOBUFS/ENOMEM on accept: the process or system is out of
    /// descriptors or memory. A listener must stop accepting for a while
    /// (level-triggered readiness would otherwise spin) instead of retrying.
    public var isResourceExhaustion: Bool {
        operation == .accept && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
    }

    public var description: String {
        let reason = operation == .resolve && errno < 0
            ? String(cString: gai_strerror(errno)) : String(cString: strerror(errno))
        return "\(operation.rawValue) failed: \(reason) (\(errno))"
    }
}

/// An IPv4 or IPv6 address with a TCP port.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Family: Sendable, Hashable { case ipv4, ipv6 }
    public let family: Family
    public let port: UInt16
    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public let addressBytes: [UInt8]
    /// IPv6 scope (interface index) of a link-local address; 0 otherwise.
    public let scopeID: UInt32

    /// Parses a numeric IPv4 (`127.0.0.1`) or IPv6 (`::1`, `[::1]`) literal.
    /// Host names are not resolved here (see `Resolver`); nil when `ip` is not
    /// a literal.
    public init?(ip: String, port: UInt16) {
        var text = Substring(ip)
        if text.hasPrefix("[") && text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        guard !text.isEmpty, !text.utf8.contains(0) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, String(text), &v4) == 1 {
            self.init(family: .ipv4, port: port, addressBytes: withUnsafeBytes(of: &v4) { Array($0) }, scopeID: 0)
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, String(text), &v6) == 1 {
            self.init(family: .ipv6, port: port, addressBytes: withUnsafeBytes(of: &v6) { Array($0) }, scopeID: 0)
            return
        }
        return nil
    }

    private init(family: Family, port: UInt16, addressBytes: [UInt8], scopeID: UInt32) {
        self.family = family
        self.port = port
        self.addressBytes = addressBytes
        self.scopeID = scopeID
    }

    /// Reads a `sockaddr_in`/`sockaddr_in6`; nil for any other family.
    init?(_ pointer: UnsafeRawPointer, length: socklen_t) {
        let family = pointer.load(as: sockaddr.self).sa_family
        if family == sa_family_t(AF_INET), length >= socklen_t(MemoryLayout<sockaddr_in>.size) {
            var address = pointer.loadUnaligned(as: sockaddr_in.self)
            self.init(family: .ipv4, port: UInt16(bigEndian: address.sin_port),
                      addressBytes: withUnsafeBytes(of: &address.sin_addr) { Array($0) }, scopeID: 0)
        } else if family == sa_family_t(AF_INET6), length >= socklen_t(MemoryLayout<sockaddr_in6>.size) {
            var address = pointer.loadUnaligned(as: sockaddr_in6.self)
            self.init(family: .ipv6, port: UInt16(bigEndian: address.sin6_port),
                      addressBytes: withUnsafeBytes(of: &address.sin6_addr) { Array($0) },
                      scopeID: address.sin6_scope_id)
        } else {
            return nil
        }
    }

    /// Calls `body` with this address as a `sockaddr` and its length.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: addressBytes) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_scope_id = scopeID
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: addressBytes) }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// The address alone as text: `127.0.0.1`, `::1`.
    public var ipText: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written = addressBytes.withUnsafeBytes { bytes in
            inet_ntop(family == .ipv4 ? AF_INET : AF_INET6, bytes.baseAddress, &text, socklen_t(text.count))
        }
        guard written != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `127.0.0.1:8080` or `[::1]:8080`.
    public var description: String {
        family == .ipv4 ? "\(ipText):\(port)" : "[\(ipText)]:\(port)"
    }
}

/// Outcome of a non-blocking read.
public enum ReadResult: Equatable, Sendable {
    case bytes(Int)
    case wouldBlock
    case endOfFile
    case failed(Int32)
}

/// Outcome of a non-blocking write.
public enum WriteResult: Equatable, Sendable {
    case bytes(Int)
    case wouldBlock
    case failed(Int32)
}

/// Outcome of starting a non-blocking connect.
public enum ConnectProgress: Equatable, Sendable {
    case connected
    /// Wait for `.writable`, then ask `pendingConnectError()`.
    case inProgress
}

/// Owner of one non-blocking TCP socket descriptor; closes it in `deinit`
/// unless already closed. Thread-confined like the loop that watches it.
/// Deregister it from its loop before closing it.
public final class Socket {
    /// The descriptor, or -1 once closed.
    public private(set) var fileDescriptor: Int32

    /// Takes ownership of `fileDescriptor`.
    public init(adopting fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    deinit {
        if fileDescriptor >= 0 { Glibc.close(fileDescriptor) }
    }

    public var isOpen: Bool { fileDescriptor >= 0 }

    /// Closes the descriptor now. Idempotent.
    public func close() {
        guard fileDescriptor >= 0 else { return }
        // On Linux the descriptor is released even when close reports EINTR,
        // so there is nothing to retry.
        Glibc.close(fileDescriptor)
        fileDescriptor = -1
    }

    /// Gives the descriptor up without closing it: the caller owns it now.
    public func releaseDescriptor() -> Int32 {
        let released = fileDescriptor
        fileDescriptor = -1
        return released
    }

    private static func makeTCP(_ family: SocketAddress.Family) throws(SocketError) -> Socket {
        let domain = family == .ipv4 ? AF_INET : AF_INET6
        let fd = Glibc.socket(domain, Int32(SOCK_STREAM.rawValue) | shim_SOCK_NONBLOCK_CLOEXEC(), 0)
        guard fd >= 0 else { throw SocketError(.socket, errno: errno) }
        return Socket(adopting: fd)
    }

    // MARK: listening

    /// A listening socket on a numeric `host` (`0.0.0.0`, `::`, `127.0.0.1`,
    /// `::1`…) and `port` (0 picks a free one: read `localPort`). With
    /// `reusePort`, several sockets (one per loop thread) share the port and
    /// the kernel spreads connections across them.
    public static func listen(host: String, port: UInt16, reusePort: Bool = false,
                              backlog: Int32 = 511) throws(SocketError) -> Socket {
        guard let address = SocketAddress(ip: host, port: port) else {
            throw SocketError(.address, errno: EINVAL)
        }
        return try listen(on: address, reusePort: reusePort, backlog: backlog)
    }

    public static func listen(on address: SocketAddress, reusePort: Bool = false,
                              backlog: Int32 = 511) throws(SocketError) -> Socket {
        let socket = try bound(to: address, reusePort: reusePort)
        guard Glibc.listen(socket.fileDescriptor, backlog) == 0 else { throw SocketError(.listen, errno: errno) }
        return socket
    }

    /// A socket bound to `address` but not listening (tests use it to hold a
    /// port nobody accepts on).
    public static func bound(to address: SocketAddress, reusePort: Bool = false) throws(SocketError) -> Socket {
        let socket = try makeTCP(address.family)
        // Restarting the daemon must not wait out TIME_WAIT on the port.
        try socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1)
        if reusePort { try socket.setOption(SOL_SOCKET, SO_REUSEPORT, 1) }
        // `::` means every address, IPv4 included: ask for dual stack
        // explicitly rather than trust net.ipv6.bindv6only (RFC 3493 §5.3),
        // which some hosts set to 1.
        if address.family == .ipv6, address.addressBytes.allSatisfy({ $0 == 0 }) {
            try socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0)
        }
        let result = address.withSockAddr { Glibc.bind(socket.fileDescriptor, $0, $1) }
        guard result == 0 else { throw SocketError(.bind, errno: errno) }
        return socket
    }

    /// The local port (after `listen` with port 0), or 0 if unknown.
    public var localPort: UInt16 { localAddress?.port ?? 0 }

    /// Accepts one pending connection: non-blocking, close-on-exec, with
    /// TCP_NODELAY. Returns nil when none is pending. Throws for real errors;
    /// check `isResourceExhaustion` (EMFILE/ENFILE) and back off.
    public func accept() throws(SocketError) -> Socket? {
        while true {
            let fd = CEventLoop.accept4(fileDescriptor, nil, nil, shim_SOCK_NONBLOCK_CLOEXEC())
            if fd >= 0 {
                let socket = Socket(adopting: fd)
                // Responses are small and latency-bound; Nagle would hold them.
                // A failure here leaves a working (if slower) connection.
                try? socket.setNoDelay(true)
                return socket
            }
            switch errno {
            case EAGAIN, EWOULDBLOCK: return nil
            // The peer gave up while queued, or a signal interrupted us: the
            // next pending connection (if any) is still there.
            case EINTR, ECONNABORTED, EPROTO: continue
            case let code: throw SocketError(.accept, errno: code)
            }
        }
    }

    // MARK: connecting

    /// Starts a non-blocking connect to `address` (TCP_NODELAY set).
    public static func connect(to address: SocketAddress) throws(SocketError) -> (socket: Socket, progress: ConnectProgress) {
        let socket = try makeTCP(address.family)
        try socket.setNoDelay(true)
        let result = address.withSockAddr { Glibc.connect(socket.fileDescriptor, $0, $1) }
        if result == 0 { return (socket, .connected) }
        switch errno {
        // EINTR: a non-blocking connect carries on in the background.
        case EINPROGRESS, EINTR: return (socket, .inProgress)
        case let code: throw SocketError(.connect, errno: code)
        }
    }

    /// After a connect in progress reports `.writable`: nil when connected,
    /// else why it failed (SO_ERROR: ECONNREFUSED, ETIMEDOUT…).
    public func pendingConnectError() -> SocketError? {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fileDescriptor, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else {
            return SocketError(.connect, errno: errno)
        }
        return code == 0 ? nil : SocketError(.connect, errno: code)
    }

    // MARK: reading and writing

    /// Reads what is available into `buffer` (which must not be empty).
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        guard buffer.count > 0 else { return .bytes(0) }
        while true {
            let count = Glibc.read(fileDescriptor, buffer.baseAddress, buffer.count)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// Writes as much of `buffer` as the socket takes. Never raises SIGPIPE
    /// (MSG_NOSIGNAL): a closed peer is `.failed(EPIPE)`.
    public func write(_ buffer: UnsafeRawBufferPointer) -> WriteResult {
        guard buffer.count > 0 else { return .bytes(0) }
        while true {
            let count = send(fileDescriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .bytes(count) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// Gathers several buffers into one `sendmsg` (writev with MSG_NOSIGNAL).
    /// At most `IOV_MAX` (1024) vectors are taken.
    public func write(vectors: UnsafeMutableBufferPointer<iovec>) -> WriteResult {
        guard let base = vectors.baseAddress, vectors.count > 0 else { return .bytes(0) }
        var message = msghdr()
        message.msg_iov = base
        message.msg_iovlen = min(vectors.count, 1024)
        while true {
            let count = sendmsg(fileDescriptor, &message, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .bytes(count) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(code)
            }
        }
    }

    /// Sends FIN after pending data; reading stays possible.
    public func shutdownWrite() throws(SocketError) {
        guard Glibc.shutdown(fileDescriptor, Int32(SHUT_WR)) == 0 else { throw SocketError(.shutdown, errno: errno) }
    }

    // MARK: options and addresses

    public func setNoDelay(_ enabled: Bool) throws(SocketError) {
        try setOption(Int32(IPPROTO_TCP), TCP_NODELAY, enabled ? 1 : 0)
    }

    /// SO_KEEPALIVE, with the idle time before the first probe, the probe
    /// interval and count when given (seconds; Linux TCP_KEEP*).
    public func setKeepAlive(_ enabled: Bool, idleSeconds: Int32? = nil, intervalSeconds: Int32? = nil,
                             probeCount: Int32? = nil) throws(SocketError) {
        try setOption(SOL_SOCKET, SO_KEEPALIVE, enabled ? 1 : 0)
        guard enabled else { return }
        if let idleSeconds { try setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, idleSeconds) }
        if let intervalSeconds { try setOption(Int32(IPPROTO_TCP), TCP_KEEPINTVL, intervalSeconds) }
        if let probeCount { try setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, probeCount) }
    }

    /// SO_SNDBUF (the kernel doubles it and applies its minimum).
    public func setSendBufferSize(_ bytes: Int32) throws(SocketError) {
        try setOption(SOL_SOCKET, SO_SNDBUF, bytes)
    }

    /// SO_RCVBUF (the kernel doubles it and applies its minimum).
    public func setReceiveBufferSize(_ bytes: Int32) throws(SocketError) {
        try setOption(SOL_SOCKET, SO_RCVBUF, bytes)
    }

    private func setOption(_ level: Int32, _ name: Int32, _ value: Int32) throws(SocketError) {
        var value = value
        guard setsockopt(fileDescriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SocketError(.setOption, errno: errno)
        }
    }

    public var localAddress: SocketAddress? { address(getsockname) }
    public var peerAddress: SocketAddress? { address(getpeername) }

    private func address(_ query: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer -> SocketAddress? in
            let ok = pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(fileDescriptor, $0, &length) } == 0
            return ok ? SocketAddress(UnsafeRawPointer(pointer), length: length) : nil
        }
    }
}
