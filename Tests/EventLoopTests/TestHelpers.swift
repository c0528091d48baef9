import EventLoop
import Glibc
import Locking
import Testing

struct TimedOut: Error, CustomStringConvertible {
    var description: String { "the loop did not finish in time" }
}

/// A one-shot value handed from a loop thread to the awaiting test.
final class Promise<Value: Sendable>: Sendable {
    private struct State {
        var done = false
        var value: Value?
        var continuation: CheckedContinuation<Value?, Never>?
    }

    private let state = Locked(State())

    func succeed(_ value: Value) { resolve(value) }
    func timeOut() { resolve(nil) }

    private func resolve(_ value: Value?) {
        let continuation = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard !state.done else { return nil }
            state.done = true
            state.value = value
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: value)
    }

    /// The value, or nil when it timed out.
    func wait() async -> Value? {
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state -> (Bool, Value?) in
                if state.done { return (true, state.value) }
                state.continuation = continuation
                return (false, nil)
            }
            if finished.0 { continuation.resume(returning: finished.1) }
        }
    }
}

/// Runs `body` on `loop`'s thread and waits for it to fulfil the promise,
/// failing after `timeout` (measured on the loop) so no test can hang.
func onLoop<Value: Sendable>(_ loop: EventLoop, timeout: Duration = .seconds(20),
                             _ body: @escaping @Sendable (Promise<Value>) throws -> Void) async throws -> Value {
    let promise = Promise<Value>()
    let failure = Locked<(any Error)?>(nil)
    loop.execute {
        loop.schedule(after: timeout) { promise.timeOut() }
        do {
            try body(promise)
        } catch {
            failure.withLock { $0 = error }
            promise.timeOut()
        }
    }
    let value = await promise.wait()
    if let error = failure.withLock({ $0 }) { throw error }
    guard let value else { throw TimedOut() }
    return value
}

/// Runs `body` with a fresh loop thread, stopped and joined afterwards.
func withLoopThread<Result>(_ body: (EventLoop) async throws -> Result) async throws -> Result {
    let thread = try EventLoopThread(name: "test-loop")
    defer { thread.stopAndJoin() }
    return try await body(thread.loop)
}

/// Echo server for tests: accepts on `listener`, echoes every byte back,
/// pausing reads while more than `highWater` bytes wait to be written
/// (back-pressure), and closes after the peer's end-of-file once flushed.
final class EchoServer: IOHandler {
    let loop: EventLoop
    let listener: Socket
    let highWater: Int
    private(set) var accepted = 0
    /// Times a connection stopped reading because its output was above `highWater`.
    var pauses = 0
    private(set) var connections: [Int32: EchoConnection] = [:]

    let sendBufferSize: Int32?

    init(loop: EventLoop, listener: Socket, highWater: Int = 256 * 1024, sendBufferSize: Int32? = nil) throws {
        self.sendBufferSize = sendBufferSize
        self.loop = loop
        self.listener = listener
        self.highWater = highWater
        try loop.register(listener.fileDescriptor, interest: .readable, handler: self)
    }

    func handleIO(_ events: IOEvents) {
        // Bounded batch per wake-up; level-triggered readiness brings us back.
        for _ in 0..<256 {
            guard let socket = try? listener.accept() else { return }
            accepted += 1
            if let sendBufferSize { try? socket.setSendBufferSize(sendBufferSize) }
            let connection = EchoConnection(server: self, socket: socket)
            connections[socket.fileDescriptor] = connection
            try? loop.register(socket.fileDescriptor, interest: .readable, handler: connection)
        }
    }

    func closed(_ connection: EchoConnection, fd: Int32) {
        connections[fd] = nil
    }

    func shutdown() {
        loop.deregister(listener.fileDescriptor)
        listener.close()
        for (fd, connection) in connections {
            loop.deregister(fd)
            connection.socket.close()
        }
        connections = [:]
    }
}

final class EchoConnection: IOHandler {
    unowned let server: EchoServer
    let socket: Socket
    /// Bytes read and not yet echoed, from `sentCount` on.
    private var output: [UInt8] = []
    private var sentCount = 0
    private var peerFinished = false
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    init(server: EchoServer, socket: Socket) {
        self.server = server
        self.socket = socket
    }

    private var waiting: Int { output.count - sentCount }

    func handleIO(_ events: IOEvents) {
        if events.contains(.writable) || waiting > 0 {
            guard writeWaiting() else { return finish() }
        }
        if events.contains(.readable) && waiting <= server.highWater && !peerFinished {
            let result = scratch.withUnsafeMutableBytes { socket.read(into: $0) }
            switch result {
            case .bytes(let count):
                output.append(contentsOf: scratch[0..<count])
                guard writeWaiting() else { return finish() }
            case .wouldBlock:
                break
            case .endOfFile:
                peerFinished = true
            case .failed:
                return finish()
            }
        } else if events.contains(.hangup) || events.contains(.error) {
            return finish()
        }
        if peerFinished && waiting == 0 { return finish() }
        var interest: IOEvents = []
        if waiting > 0 { interest.insert(.writable) }
        if waiting <= server.highWater && !peerFinished {
            interest.insert(.readable)
        } else if !peerFinished {
            server.pauses += 1
        }
        server.loop.setInterest(socket.fileDescriptor, interest)
    }

    /// Writes what waits until the socket takes no more; false when the
    /// write failed.
    private func writeWaiting() -> Bool {
        while waiting > 0 {
            switch output[sentCount...].withUnsafeBytes({ socket.write($0) }) {
            case .bytes(let count):
                sentCount += count
            case .wouldBlock:
                return true
            case .failed:
                return false
            }
        }
        output.removeAll(keepingCapacity: true)
        sentCount = 0
        return true
    }

    private func finish() {
        let fd = socket.fileDescriptor
        server.loop.deregister(fd)
        socket.close()
        server.closed(self, fd: fd)
    }
}
