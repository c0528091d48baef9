import APNsCore
import Feedback
import FeedbackHook
import Observability
import HTTPCore
import RelayCore
import Testing

@testable import Delivery
import TestSupport

/// The one delivery path every route uses: what the end of a delivery
/// records, whichever route asked for it.
@Suite("The delivery path")
struct DeliveryPathTests {
    /// A path over a manual `FakeSender`, with a feedback list and no hook.
    struct Fixture {
        let sender = FakeSender()
        let counters: InFlightDeliveries
        let store = FeedbackStore(maxPerApp: 10)
        let path: DeliveryPath<APNsPush>
        let app = RelayApp(id: "toot", topic: "cx.c3.toot")

        init(maxInFlight: Int = 10) {
            counters = InFlightDeliveries(maxInFlight: maxInFlight)
            path = DeliveryPath(service: APNsPush(sender: sender), counters: counters, feedback: FeedbackSink(store: store, hook: nil))
        }

        static let token = String(repeating: "ab", count: 32)

        func notification() -> APNsNotification {
            APNsNotification(to: Fixture.token, environment: .production, credential: .primary,
                             headers: APNsRequestHeaders(topic: app.topic, [HTTPField(name: "apns-push-type", value: "alert")]),
                             payload: Array("{}".utf8), apnsID: "ID", ttl: 0)
        }

        /// Delivers one notification, completes it with `outcome`, and
        /// returns what the route's completion got.
        func deliver(_ outcome: DeliveryOutcome, posting: HookPosting,
                     token: String = Fixture.token) -> (APNsDelivery, FailedPushLog?)? {
            var got: (APNsDelivery, FailedPushLog?)?
            let start = path.deliver(notification(), app: app, token: token, posting: posting) { got = ($0, $1) }
            guard case .sent = start else { return nil }
            sender.complete(with: outcome)
            return got
        }
    }

    static let gorushSource = FailedPushSource(sentAPNsID: "SENT")

    @Test("the request goes to /3/device/<token> with the app's topic after the push type")
    func requestCarriesPathAndTopic() {
        let fixture = Fixture()
        _ = fixture.deliver(.apns(status: 200, reason: nil, apnsID: "ID"), posting: .deadTokens)
        let sent = fixture.sender.sent
        #expect(sent.count == 1)
        #expect(sent.first?.path == "/3/device/" + Fixture.token)
        #expect(sent.first?.headers == [HTTPField(name: "apns-push-type", value: "alert"),
                                        HTTPField(name: "apns-topic", value: "cx.c3.toot")])
    }

    @Test("headers without a push type first get the topic first")
    func topicGoesFirstWithoutLeadingPushType() {
        let headers = APNsRequestHeaders(topic: "t", [HTTPField(name: "apns-id", value: "X")])
        #expect(headers.fields == [HTTPField(name: "apns-topic", value: "t"), HTTPField(name: "apns-id", value: "X")])
    }

    static let healthCases: [(outcome: DeliveryOutcome, rejectedBefore: Bool, rejectedAfter: Bool)] = [
        (.apns(status: 403, reason: .badCertificate, apnsID: nil), false, true),
        (.apns(status: 403, reason: .expiredProviderToken, apnsID: nil), false, true),
        (.apns(status: 200, reason: nil, apnsID: nil), true, false),
        (.apns(status: 410, reason: .unregistered, apnsID: nil), true, true),
        (.apns(status: 500, reason: .internalServerError, apnsID: nil), true, true),
        (.answerTimedOut, true, true),
        (.tlsFailed("handshake"), false, false),
    ]

    @Test("APNs' verdict on the credentials is the app's health, from the one place that decides it",
          arguments: healthCases)
    func healthFollowsCredentialVerdict(_ example: (outcome: DeliveryOutcome, rejectedBefore: Bool, rejectedAfter: Bool)) {
        let fixture = Fixture()
        fixture.app.health.record(example.rejectedBefore ? .rejected : .accepted)
        _ = fixture.deliver(example.outcome, posting: .deadTokens)
        #expect(fixture.app.health.credentialsRejected == example.rejectedAfter)
        #expect(fixture.app.health.credentialsRejected == (example.outcome.credentialVerdict.map { $0 == .rejected }
            ?? example.rejectedBefore))
    }

    static let feedbackCases: [(outcome: DeliveryOutcome, dead: Bool)] = [
        (.apns(status: 410, reason: .unregistered, apnsID: nil), true),
        (.apns(status: 410, reason: .expiredToken, apnsID: nil), true),
        (.apns(status: 400, reason: .badDeviceToken, apnsID: nil), true),
        (.apns(status: 400, reason: .deviceTokenNotForTopic, apnsID: nil), true),
        (.apns(status: 400, reason: .badTopic, apnsID: nil), false),
        (.apns(status: 429, reason: .tooManyRequests, apnsID: nil), false),
        (.apns(status: 200, reason: nil, apnsID: nil), false),
        (.streamFailed("reset"), false),
    ]

    @Test("a dead token goes to the app's feedback list in APNs' form, and its log to the hook on the Web Push path",
          arguments: feedbackCases)
    func deadTokensOnTheWebPushPath(_ example: (outcome: DeliveryOutcome, dead: Bool)) throws {
        let fixture = Fixture()
        let written = Fixture.token.uppercased()
        let (delivery, log) = try #require(fixture.deliver(example.outcome, posting: .deadTokens, token: written))
        #expect(delivery.outcome == example.outcome)
        let entries = fixture.store.take(app: "toot")
        #expect(entries.map(\.token) == (example.dead ? [Fixture.token] : []))
        #expect((log != nil) == example.dead)
        #expect(log?.token == (example.dead ? written : nil))
    }

    @Test("the provider routes get a failed-push log for every failure, naming the apns-id the relay sent",
          arguments: feedbackCases)
    func everyFailureOnTheProviderPath(_ example: (outcome: DeliveryOutcome, dead: Bool)) throws {
        let fixture = Fixture()
        let (delivery, log) = try #require(fixture.deliver(example.outcome, posting: .everyFailure(Self.gorushSource)))
        let accepted = example.outcome == .apns(status: 200, reason: nil, apnsID: nil)
        #expect((log == nil) == accepted)
        #expect(log == APNsPush.failedPushLog(for: delivery, token: Fixture.token, app: "toot", source: Self.gorushSource))
        #expect(fixture.store.take(app: "toot").count == (example.dead ? 1 : 0))
    }

    @Test("a log for the caller is the provider route's log; the hook and the feedback list hear nothing: the log and the dead token are the caller's",
          arguments: feedbackCases)
    func everyFailureToCallerPostsNothing(_ example: (outcome: DeliveryOutcome, dead: Bool)) throws {
        // A hook already shut down counts every post as dropped: the count
        // is the number of posts, with no server and no wait.
        let hook = try FeedbackHook(url: "http://127.0.0.1:9/hook", headers: [], queueCapacity: 10,
                                    timeout: .seconds(1), maxAttempts: 1, backoff: .zero,
                                    logger: Logger(level: .warning) { _ in })
        hook.shutdown(within: .zero)
        let store = FeedbackStore(maxPerApp: 10)
        let sender = FakeSender()
        let path = DeliveryPath(service: APNsPush(sender: sender), counters: InFlightDeliveries(maxInFlight: 10),
                                feedback: FeedbackSink(store: store, hook: hook))
        let app = RelayApp(id: "toot", topic: "cx.c3.toot")
        var got: (APNsDelivery, FailedPushLog?)?
        _ = path.deliver(Fixture().notification(), app: app, token: Fixture.token,
                         posting: .everyFailureToCaller(Self.gorushSource)) { got = ($0, $1) }
        sender.complete(with: example.outcome)
        let (delivery, log) = try #require(got)
        let accepted = example.outcome == .apns(status: 200, reason: nil, apnsID: nil)
        #expect((log == nil) == accepted)
        #expect(log == APNsPush.failedPushLog(for: delivery, token: Fixture.token, app: "toot", source: Self.gorushSource))
        #expect(store.take(app: "toot").isEmpty)
        #expect(hook.counts == FeedbackHookCounts())

        // The same failure with `.everyFailure` is posted and its dead token
        // recorded: the checks above would have seen them.
        _ = path.deliver(Fixture().notification(), app: app, token: Fixture.token,
                         posting: .everyFailure(Self.gorushSource)) { _, _ in }
        sender.complete(with: example.outcome)
        #expect(hook.counts.dropped == (accepted ? 0 : 1))
        #expect(store.take(app: "toot").count == (example.dead ? 1 : 0))
    }

    @Test("over MAX_IN_FLIGHT nothing is sent, no completion runs, and the refusal is an ended delivery")
    func overloadedSendsNothing() {
        let fixture = Fixture(maxInFlight: 1)
        var completions = 0
        let first = fixture.path.deliver(fixture.notification(), app: fixture.app, token: Fixture.token,
                                         posting: .deadTokens) { _, _ in completions += 1 }
        let second = fixture.path.deliver(fixture.notification(), app: fixture.app, token: Fixture.token,
                                          posting: .everyFailure(Self.gorushSource)) { _, _ in completions += 1 }
        let third = fixture.path.deliver(fixture.notification(), app: fixture.app, token: Fixture.token,
                                         posting: .deadTokens) { _, _ in completions += 1 }
        guard case .sent = first, case .overloaded(let log?) = second, case .overloaded(nil) = third else {
            Issue.record("got \(first), \(second), \(third)")
            return
        }
        #expect(log.error == "the relay is over MAX_IN_FLIGHT")
        #expect(log.apnsID == "SENT")
        #expect(fixture.sender.sent.count == 1)
        #expect(fixture.counters.inFlight == 1)
        fixture.sender.complete(with: .apns(status: 200, reason: nil, apnsID: nil))
        #expect(completions == 1)
        #expect(fixture.counters.inFlight == 0)
    }

    @Test("the in-flight place is held until APNs answers, then freed before the route's completion runs")
    func inFlightIsHeldUntilTheAnswer() {
        let fixture = Fixture()
        var inFlightInCompletion: Int?
        _ = fixture.path.deliver(fixture.notification(), app: fixture.app, token: Fixture.token, posting: .deadTokens) {
            _, _ in inFlightInCompletion = fixture.counters.inFlight
        }
        #expect(fixture.counters.inFlight == 1)
        #expect(inFlightInCompletion == nil)
        fixture.sender.completeAll()
        #expect(inFlightInCompletion == 0)
    }
}
