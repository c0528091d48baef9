import APNsCore
import Base64URL
import Delivery
import Feedback
import EventLoop
import Glibc
import HTTP1
import HTTPCore
import Locking
import Observability
import RelayCore
import TLS
import TestSupport
import Testing

@testable import Relay


/// One default app, `com.example.app`, with a health of its own.
func exampleApps() -> RelayApps {
    RelayApps(defaultApp: RelayApp(topic: "com.example.app"))
}

/// A feedback list in memory and no hook: where a route's dead tokens go
/// when the test does not look at them.
func unwatchedFeedback() -> FeedbackSink {
    FeedbackSink(store: FeedbackStore(maxPerApp: 100), hook: nil)
}

/// Log lines captured for assertions.
final class CapturedLog: Sendable {
    private let storage = Locked<[String]>([])
    var lines: [String] { storage.withLock { $0 } }
    var logger: Logger { logger(level: .debug) }
    func logger(level: LogLevel) -> Logger {
        Logger(level: level) { bytes in
            // A loop's LoopLogBuffer hands over several lines at once.
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { String($0) + "\n" }
            self.storage.withLock { $0.append(contentsOf: lines) }
        }
    }

    /// Whether a line satisfying `predicate` shows up within `seconds`: a
    /// server's loop writes its lines at the end of the loop iteration, just
    /// after the response went out.
    func eventuallyContains(seconds: Double = 2, _ predicate: (String) -> Bool) -> Bool {
        eventually(timeout: .milliseconds(Int(seconds * 1000))) { lines.contains(where: predicate) }
    }
}

let testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/// A valid uncompressed P-256 point shape (0x04 + 64 bytes) in base64url.
let testDH = base64URLEncode([0x04] + [UInt8](repeating: 7, count: 64))
let testSalt = base64URLEncode([UInt8](repeating: 9, count: 16))

/// An aesgcm Web Push request as Mastodon sends it.
func webPushRequest(path: String = "/relay-to/production/" + testToken, ttl: String? = "172800",
                    urgency: String? = "normal", topic: String? = nil, encoding: String? = "aesgcm",
                    body: [UInt8] = [UInt8](repeating: 0xAB, count: 100), extraHeaders: [(String, String)] = [])
    -> HTTP1Request {
    var headers = HTTPHeaders()
    headers.append(name: "Host", value: "relay.example")
    if let encoding { headers.append(name: "Content-Encoding", value: encoding) }
    if let ttl { headers.append(name: "TTL", value: ttl) }
    if let urgency { headers.append(name: "Urgency", value: urgency) }
    if let topic { headers.append(name: "Topic", value: topic) }
    headers.append(name: "Crypto-Key", value: "dh=\(testDH);p256ecdsa=AAAA")
    headers.append(name: "Encryption", value: "salt=\(testSalt)")
    for (name, value) in extraHeaders { headers.append(name: name, value: value) }
    return HTTP1Request(method: "POST", target: path, version: .http1_1, headers: headers, body: body, keepAlive: true)
}

/// The same request as bytes on the wire.
func webPushBytes(path: String = "/relay-to/production/" + testToken, body: [UInt8] = [UInt8](repeating: 0xAB, count: 100),
                  connectionClose: Bool = false) -> [UInt8] {
    var text = "POST \(path) HTTP/1.1\r\nHost: relay.example\r\nContent-Encoding: aesgcm\r\nTTL: 172800\r\n"
    text += "Urgency: normal\r\nCrypto-Key: dh=\(testDH);p256ecdsa=AAAA\r\nEncryption: salt=\(testSalt)\r\n"
    text += "Content-Length: \(body.count)\r\n"
    if connectionClose { text += "Connection: close\r\n" }
    text += "\r\n"
    return Array(text.utf8) + body
}

/// Notifications seen by the fake senders of every loop.
final class SentRecorder: Sendable {
    private let storage = Locked<[APNsNotification]>([])
    var all: [APNsNotification] { storage.withLock { $0 } }
    func record(_ notification: APNsNotification) { storage.withLock { $0.append(notification) } }
}

/// A relay listening on 127.0.0.1 (port 0) over `threads` loops, each with a
/// fake sender that answers `outcome` after `delay`.
final class ServerFixture {
    let group: EventLoopGroup
    let server: HTTP1Listener<WebPushHandler>
    let deliveries: InFlightDeliveries
    let port: UInt16
    let recorder = SentRecorder()
    let log = CapturedLog()

    init(threads: Int = 2, reusePort: Bool = true, delay: Duration = .milliseconds(1),
         limits: HTTP1Limits = HTTP1Limits(),
         timeouts: HTTP1ConnectionMachine.Timeouts = .init(),
         maxConnections: Int = 1000, maxInFlight: Int = 1000, tlsContext: TLSContext? = nil,
         outcome: @escaping @Sendable (APNsNotification) -> DeliveryOutcome = {
             .apns(status: 200, reason: nil, apnsID: $0.apnsID)
         }) throws {
        group = try EventLoopGroup(count: threads, namePrefix: "test")
        let recorder = self.recorder
        let options = ListenerOptions(bindAddress: "127.0.0.1", port: 0, reusePort: reusePort, limits: limits,
                                      timeouts: timeouts, maxConnections: maxConnections)
        let deliveries = InFlightDeliveries(maxInFlight: maxInFlight)
        self.deliveries = deliveries
        let logger = log.logger(level: .info)
        let loopContexts = LoopContexts(loops: group.loops) { loop in
            LoopContext(sender: FakeSender(loop: loop, delay: delay, onSend: { recorder.record($0) }, outcome: outcome),
                        apps: exampleApps(), logger: logger, loop: loop)
        }
        server = HTTP1Listener(options: options, loops: group.loops, tlsContext: tlsContext, loopContexts: loopContexts,
                               logger: logger, deliveries: deliveries, feedback: unwatchedFeedback())
        port = try server.start()
    }

    /// Waits (bounded) until no connection is open and nothing is in flight.
    func waitUntilDrained(seconds: Double = 5) -> Bool {
        let deadline = EventLoop.monotonicNanoseconds() + UInt64(seconds * 1e9)
        while EventLoop.monotonicNanoseconds() < deadline {
            if isDrained { return true }
            usleep(10_000)
        }
        return isDrained
    }

    private var isDrained: Bool { server.isDrained && deliveries.inFlight == 0 }

    func stop() {
        server.beginShutdown()
        server.closeAllConnections()
        group.stopAndJoin()
    }
}

/// A Web Push handler over a fake APNs, as every handler test makes it:
/// the apps, APNs' answer, the in-flight limit and the metrics vary.
struct WebPushHandlerFixture {
    let apps: RelayApps
    let sender: FakeSender
    let counters: InFlightDeliveries
    let log = CapturedLog()
    let handler: WebPushHandler
    /// A loop that never runs: the test's thread is the handler's loop
    /// thread, and `logLines` ends the iteration (flushes the log).
    let loop: EventLoop

    /// `outcome`: what APNs answers each notification (200 by default).
    init(apps: RelayApps = exampleApps(), maxInFlight: Int = 10, metrics: RelayMetrics? = nil,
         outcome: @escaping (APNsNotification) -> DeliveryOutcome = { .apns(status: 200, reason: nil, apnsID: $0.apnsID) })
        throws {
        self.apps = apps
        loop = try EventLoop()
        sender = FakeSender(outcome: outcome)
        counters = InFlightDeliveries(maxInFlight: maxInFlight)
        handler = WebPushHandler(sender: sender, apps: apps, counters: counters, logger: log.logger, loop: loop,
                                 unixTime: { 1_000_000 }, metrics: metrics)
    }

    /// APNs answers every notification with `outcome`.
    init(maxInFlight: Int = 10, outcome: DeliveryOutcome) throws {
        try self.init(maxInFlight: maxInFlight, outcome: { _ in outcome })
    }

    /// The handler's log lines so far, its loop's buffer written out first.
    var logLines: [String] {
        handler.flushLog()
        return log.lines
    }

    /// Runs the request to its answer: the handler's own, or the one after
    /// APNs answered (never inside `handle`).
    func answer(_ request: HTTP1Request) -> HTTP1Response? {
        var delivered: HTTP1Response?
        if let immediate = handler.handle(request, completion: { delivered = $0 }) { return immediate }
        #expect(delivered == nil, "completion must not run inside handle")
        sender.completeAll()
        return delivered
    }

    /// The status of a health check at `path`.
    func health(_ path: String) -> Int? {
        answer(HTTP1Request(method: "GET", target: path, version: .http1_1, headers: [:], body: [],
                            keepAlive: true))?.status
    }
}

extension WebPushHandler {
    /// A handler over a loop context of its own, as the fixtures make them.
    convenience init(sender: NotificationSender, apps: RelayApps, counters: InFlightDeliveries, logger: Logger,
                     loop: EventLoop, maxTTL: Int = Configuration.maxTTL, publicURL: String? = nil,
                     listenerIsTLS: Bool = false, unixTime: @escaping () -> Int = WebPushHandler.unixTime,
                     metrics: RelayMetrics? = nil, feedback: FeedbackSink = unwatchedFeedback()) {
        self.init(loopContext: LoopContext(sender: sender, apps: apps, logger: logger, loop: loop, metrics: metrics),
                  counters: counters, feedback: feedback, maxTTL: maxTTL, publicURL: publicURL,
                  listenerIsTLS: listenerIsTLS, unixTime: unixTime)
    }

    /// A reload, as the daemon does it: the loop context's apps.
    func replaceApps(_ apps: RelayApps) { loopContext.replaceApps(apps) }
}

extension ProviderAPIHandler {
    /// A handler over a loop context of its own, as the fixtures make them.
    convenience init(sender: NotificationSender, apps: RelayApps, context: ProviderAPIContext,
                     counters: InFlightDeliveries, logger: Logger, loop: EventLoop,
                     unixTime: @escaping () -> Int = WebPushHandler.unixTime, metrics: ProviderMetrics? = nil) {
        self.init(loopContext: LoopContext(sender: sender, apps: apps, logger: logger, loop: loop,
                                           providerMetrics: metrics),
                  context: context, counters: counters, loop: loop, unixTime: unixTime)
    }

    /// A reload, as the daemon does it: the loop context's apps.
    func replaceApps(_ apps: RelayApps) { loopContext.replaceApps(apps) }
}
