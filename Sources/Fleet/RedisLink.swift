import Dispatch
import EventLoop
import Redis
import Synchronization

/// One connection to Redis on a thread of its own, for callers on any
/// thread: the relay's loops hand it commands and hear the replies on the
/// link's thread, so a slow or absent Redis never holds a loop that serves
/// senders. A fleet runs two per instance: one for short commands, one for
/// the stream reads that block (`XREADGROUP … BLOCK`), because a blocked
/// read would hold every command queued behind it on the same connection.
///
/// The connection reconnects with backoff by itself (`RedisConnection`);
/// a command sent while it is down waits up to the command timeout, then
/// fails, so every caller hears back.
public final class RedisLink: Sendable {
    public typealias Completion = @Sendable (Result<RedisValue, RedisError>) -> Void

    /// What the link is for, in its log lines and metrics ("commands",
    /// "reads").
    public let name: String
    public let url: RedisURL
    private let thread: EventLoopThread
    private let connection: LoopConfined<RedisConnection>
    private let counts = LinkCounts()

    /// Starts the link's thread and its first connection attempt; returns
    /// at once. `onEvent` hears each connect, failure and close on the
    /// link's thread (`RedisLinkLog` turns them into lines).
    public init(url: RedisURL, name: String, settings: RedisConnectionSettings = RedisConnectionSettings(),
                onEvent: @escaping @Sendable (RedisConnectionEvent) -> Void = { _ in }) throws(EventLoopError) {
        self.url = url
        self.name = name
        thread = try EventLoopThread(name: "redis-\(name)")
        let loop = thread.loop
        let counts = counts
        let connection = RedisConnection(url: url, settings: settings, on: loop) { event in
            switch event {
            case .connected:
                counts.connected.store(true, ordering: .relaxed)
                counts.connects.add(1, ordering: .relaxed)
            case .connectFailed, .lost:
                counts.connected.store(false, ordering: .relaxed)
                counts.failures.add(1, ordering: .relaxed)
            case .closed:
                counts.connected.store(false, ordering: .relaxed)
            }
            onEvent(event)
        }
        self.connection = LoopConfined(connection)
        loop.execute { [self] in self.connection.value.start() }
    }

    /// The loop the link's connection lives on: completions run there.
    public var loop: EventLoop { thread.loop }

    /// Whether the connection is up now (logged in, commands flowing).
    public var isConnected: Bool { counts.connected.load(ordering: .relaxed) }

    /// Connections made, the first included.
    public var connectCount: Int { counts.connects.load(ordering: .relaxed) }

    /// Attempts that failed and ready connections lost.
    public var failureCount: Int { counts.failures.load(ordering: .relaxed) }

    /// Sends `command` from any thread; `completion` runs on the link's
    /// thread with the reply or why there is none.
    public func send(_ command: RedisCommand, completion: @escaping Completion) {
        if loop.isOnLoopThread {
            connection.value.send(command, completion: completion)
        } else {
            loop.execute { [self] in self.connection.value.send(command, completion: completion) }
        }
    }

    /// Closes the connection (commands not answered fail with `.closed`)
    /// and ends the link's thread. From any thread but the link's own.
    public func close() {
        let closed = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            self.connection.value.close()
            closed.signal()
        }
        closed.wait()
        thread.stopAndJoin()
    }
}

/// A value only its loop's thread touches, carried across the `Sendable`
/// boundary: the link checks the thread before each use.
final class LoopConfined<Value>: @unchecked Sendable {
    private let stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { stored }
}

/// The link's state and counts, read from any thread.
final class LinkCounts: Sendable {
    let connected = Atomic<Bool>(false)
    let connects = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
}
