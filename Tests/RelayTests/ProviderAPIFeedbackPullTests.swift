import APNs
import AsyncPush
import Delivery
import Dispatch
import EventLoop
import Feedback
import Foundation
import HTTPCore
import Locking
import ProviderAPI
import Provisioning
import RelayCore
import Testing
import TestSupport
import XMLRPC

@testable import Relay

/// A shared list that answers each pull, from another thread, with what a
/// test set, and counts the pulls.
private final class FakeSharedList: SharedFeedbackList {
    let answer: Locked<FeedbackPull>
    let pulls = Locked<[String]>([])
    init(_ answer: FeedbackPull) { self.answer = Locked(answer) }

    func pull(app: String, completion: @escaping @Sendable (FeedbackPull) -> Void) {
        pulls.withLock { $0.append(app) }
        let pull = answer.withLock { $0 }
        DispatchQueue.global().async { completion(pull) }
    }

    var unflushed: Int { 0 }
    func finish(within: Duration) -> Int { 0 }
}

private let deadToken = String(repeating: "4", count: 64)

@Suite("Provider API: feedback pulls from a shared list", .serialized)
struct ProviderAPIFeedbackPullTests {
    /// The answer to `GET target` (or an XML-RPC `feedback` with `xmlRPC`)
    /// on a handler whose loop runs, and whether it came on that loop after
    /// `handle` returned nil.
    private func pull(_ shared: FakeSharedList, xmlRPC: Bool = false, log: CapturedLog)
        throws -> (response: HTTP1Response?, onLoopLater: Bool) {
        let thread = try EventLoopThread(name: "api-test")
        defer { thread.stopAndJoin() }
        let loop = thread.loop
        let context = ProviderAPIContext(
            keyring: try APIKeyring([]), provisioned: ProvisionedApps(catalog: APNsCredentialCatalog(caFile: nil)),
            feedback: FeedbackSink(store: FeedbackStore(maxPerApp: 10), hook: nil, shared: shared),
            limits: ProviderLimits(maxBodyBytes: 1 << 20, maxNotifications: 100, maxTokens: 100),
            xmlLimits: XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 32, maxElements: 1000, maxStringBytes: 1 << 20),
            provisionDirectory: nil, async: AsyncPushes(byDefault: false, maxTries: 5, maxPending: 100))
        let result = Locked<(HTTP1Response?, Bool)>((nil, false))
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            let handler = ProviderAPIHandler(sender: FakeSender(outcome: { _ in .apns(status: 200, reason: nil, apnsID: "x") }),
                                             apps: RelayApps([RelayApp(topic: "com.example.app")], defaultAppID: RelayApp.defaultID),
                                             context: context, counters: InFlightDeliveries(maxInFlight: 10),
                                             logger: log.logger, loop: loop)
            let body = xmlRPC ? Array("""
                <?xml version="1.0"?><methodCall><methodName>feedback</methodName><params>\
                <param><value><string>default</string></value></param></params></methodCall>
                """.utf8) : []
            let request = HTTP1Request(method: xmlRPC ? "POST" : "GET", target: xmlRPC ? "/" : "/api/feedback/default",
                                       version: .http1_1, headers: HTTPHeaders(), body: body, keepAlive: true)
            var returned = true
            let immediate = handler.handle(request) { response in
                result.withLock { $0 = (response, !returned && loop.isOnLoopThread) }
                handler.flushLog()
                done.signal()
            }
            returned = false
            if let immediate {
                result.withLock { $0 = (immediate, false) }
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        let (response, later) = result.withLock { $0 }
        return (response, later)
    }

    @Test("GET /api/feedback/<app> asks the shared list and answers its entries later, on the handler's loop")
    func jsonPullIsAnsweredOnTheLoop() throws {
        let entry = FeedbackEntry(app: "default", environment: .production, token: deadToken, reason: "Unregistered", time: 0)
        let shared = FakeSharedList(FeedbackPull(entries: [entry]))
        let log = CapturedLog()
        let (response, onLoopLater) = try pull(shared, log: log)
        #expect(onLoopLater)
        #expect(response?.status == 200)
        #expect(response?.body == feedbackJSON([entry]))
        #expect(shared.pulls.withLock { $0 } == ["default"])
        #expect(log.eventuallyContains { $0.contains(" info ") && $0.contains("api feedback") && $0.contains("entries=1") })
    }

    @Test("a pull the shared list could not answer is still 200 with this instance's entries, and a warning line")
    func pullWithoutRedisWarns() throws {
        let shared = FakeSharedList(FeedbackPull(entries: [], redisFailure: "Redis: timed out: no connection to Redis within 5 s"))
        let log = CapturedLog()
        let (response, onLoopLater) = try pull(shared, log: log)
        #expect(onLoopLater)
        #expect(response?.status == 200)
        #expect(response?.body == Array("[]".utf8))
        #expect(log.eventuallyContains {
            $0.contains(" warning ") && $0.contains("entries=0 (this instance's only: Redis: timed out")
        })
    }

    @Test("pyapns' feedback asks the shared list too, answered later as (time, token) pairs")
    func pyAPNsPullIsAnsweredOnTheLoop() throws {
        let entry = FeedbackEntry(app: "default", environment: .production, token: deadToken, reason: "Unregistered",
                                  time: 1_764_114_000_123)
        let shared = FakeSharedList(FeedbackPull(entries: [entry]))
        let (response, onLoopLater) = try pull(shared, xmlRPC: true, log: CapturedLog())
        #expect(onLoopLater)
        let text = String(decoding: response?.body ?? [], as: UTF8.self)
        #expect(response?.status == 200)
        #expect(text.contains("<dateTime.iso8601>20251125T23:40:00</dateTime.iso8601>"))
        #expect(text.contains(deadToken))
    }
}
