import Foundation
import Glibc
import HTTP2
import Locking
import Testing
import TestSupport
@testable import APNsEmulator

@Suite("APNs emulator over the wire", .timeLimit(.minutes(2)))
struct APNsEmulatorTests {
    @Test("a valid notification is answered 200 with its apns-id echoed and recorded with all its headers (curl)")
    func acceptsAndRecords() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let apnsID = "123E4567-E89B-12D3-A456-426614174000"
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())", headers: [
            "apns-topic: \(Fixture.topic)", "apns-id: \(apnsID)", "apns-push-type: alert", "apns-priority: 10",
            "apns-expiration: 1700000000", "apns-collapse-id: thread-1",
        ])
        #expect(result.status == 200, "\(result.standardError)")
        #expect(result.headers["apns-id"] == apnsID)
        #expect(result.body.isEmpty)
        #expect(emulator.acceptedCount == 1)
        #expect(emulator.rejectedCount == 0)
        let notifications = emulator.receivedNotifications()
        let notification = try #require(notifications.first)
        #expect(notifications.count == 1)
        #expect(notification.deviceToken == Fixture.token())
        #expect(notification.apnsID == apnsID)
        #expect(!notification.apnsIDWasGenerated)
        #expect(notification.topic == Fixture.topic)
        #expect(notification.pushType == "alert")
        #expect(notification.priority == 10)
        #expect(notification.expiration == 1_700_000_000)
        #expect(notification.collapseID == "thread-1")
        #expect(notification.authenticatedAs == TestCertificates.bundleID)
        #expect(notification.payload == Fixture.payload)
        #expect(notification.header("apns-collapse-id") == "thread-1")
        #expect(notification.header("user-agent")?.hasPrefix("curl/") == true)
    }

    @Test("without apns-id the emulator answers a fresh UUID, and the certificate's topic is the default")
    func generatesIdentifier() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let first = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token(1))")
        let second = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token(2))")
        #expect(first.status == 200 && second.status == 200)
        let firstID = try #require(first.headers["apns-id"])
        #expect(UUIDKey(firstID[...].utf8) != nil)
        #expect(firstID != second.headers["apns-id"])
        let recorded = emulator.receivedNotifications()
        #expect(recorded.map(\.apnsIDWasGenerated) == [true, true])
        #expect(recorded.first?.topic == Fixture.topic)
    }

    @Test("playing the development environment, every answer carries a fresh lowercase apns-unique-id, the accepted one's recorded; production sends none")
    func uniqueIDInDevelopment() throws {
        let development = try Fixture.emulator(environment: .development)
        defer { development.stop() }
        let first = try Curl.request(port: development.port, path: "/3/device/\(Fixture.token(1))")
        let second = try Curl.request(port: development.port, path: "/3/device/\(Fixture.token(2))")
        let refused = try Curl.request(port: development.port, path: "/3/device/\(Fixture.token(3))",
                                       headers: ["apns-priority: 7"])
        #expect(first.status == 200 && second.status == 200 && refused.status == 400)
        let ids = [first, second, refused].compactMap { $0.headers["apns-unique-id"] }
        #expect(ids.count == 3 && Set(ids).count == 3)
        #expect(ids.allSatisfy { UUIDKey($0[...].utf8) != nil && $0 == $0.lowercased() })
        #expect(development.receivedNotifications().map(\.uniqueID) == Array(ids.prefix(2)))
        #expect(development.receivedNotifications().first?.jsonLine.contains("\"unique_id\":\"\(ids[0])\"") == true)

        let production = try Fixture.emulator()
        defer { production.stop() }
        let answer = try Curl.request(port: production.port, path: "/3/device/\(Fixture.token(1))")
        #expect(answer.status == 200 && answer.headers["apns-unique-id"] == nil)
        #expect(production.receivedNotifications().map(\.uniqueID) == [nil])
    }

    struct RuleCase: CustomTestStringConvertible, Sendable {
        var name: String
        var method = "POST"
        var path = "/3/device/" + Fixture.token()
        var headers: [(name: String, value: String)] = [("apns-topic", Fixture.topic)]
        var body = Fixture.payload
        var expectedTopic: String?
        var status: Int
        var reason: String
        var testDescription: String { name }
    }

    static let ruleCases: [RuleCase] = [
        RuleCase(name: "GET is 405 MethodNotAllowed", method: "GET", status: 405, reason: "MethodNotAllowed"),
        RuleCase(name: "another path is 404 BadPath", path: "/3/devices/" + Fixture.token(), status: 404, reason: "BadPath"),
        RuleCase(name: "no token is 400 MissingDeviceToken", path: "/3/device/", status: 400, reason: "MissingDeviceToken"),
        RuleCase(name: "short token is 400 BadDeviceToken", path: "/3/device/abcd", status: 400, reason: "BadDeviceToken"),
        RuleCase(name: "non-hex token is 400 BadDeviceToken", path: "/3/device/" + String(repeating: "zz", count: 32),
                 status: 400, reason: "BadDeviceToken"),
        RuleCase(name: "201-digit token is 400 BadDeviceToken", path: "/3/device/" + String(repeating: "a", count: 201),
                 status: 400, reason: "BadDeviceToken"),
        RuleCase(name: "repeated apns-priority is 400 DuplicateHeaders",
                 headers: [("apns-topic", Fixture.topic), ("apns-priority", "10"), ("apns-priority", "10")],
                 status: 400, reason: "DuplicateHeaders"),
        RuleCase(name: "unknown push type is 400 InvalidPushType",
                 headers: [("apns-topic", Fixture.topic), ("apns-push-type", "shout")], status: 400, reason: "InvalidPushType"),
        RuleCase(name: "priority 7 is 400 BadPriority",
                 headers: [("apns-topic", Fixture.topic), ("apns-priority", "7")], status: 400, reason: "BadPriority"),
        RuleCase(name: "non-numeric expiration is 400 BadExpirationDate",
                 headers: [("apns-topic", Fixture.topic), ("apns-expiration", "soon")], status: 400, reason: "BadExpirationDate"),
        RuleCase(name: "65-byte collapse id is 400 BadCollapseId",
                 headers: [("apns-topic", Fixture.topic), ("apns-collapse-id", String(repeating: "c", count: 65))],
                 status: 400, reason: "BadCollapseId"),
        RuleCase(name: "apns-id that is not a UUID is 400 BadMessageId",
                 headers: [("apns-topic", Fixture.topic), ("apns-id", "not-a-uuid")], status: 400, reason: "BadMessageId"),
        RuleCase(name: "empty payload is 400 PayloadEmpty", body: [], status: 400, reason: "PayloadEmpty"),
        RuleCase(name: "4097-byte payload is 413 PayloadTooLarge",
                 body: Array(("{\"aps\":{},\"p\":\"" + String(repeating: "x", count: 4097 - 17) + "\"}").utf8),
                 status: 413, reason: "PayloadTooLarge"),
        RuleCase(name: "payload that is not a JSON object is 400 BadPayload", body: Array("hello".utf8),
                 status: 400, reason: "BadPayload"),
        RuleCase(name: "JSON without aps is 400 BadPayload", body: Array(#"{"p":"x"}"#.utf8), status: 400, reason: "BadPayload"),
        RuleCase(name: "topic other than the certificate's is 400 TopicDisallowed",
                 headers: [("apns-topic", "com.example.other")], status: 400, reason: "TopicDisallowed"),
        RuleCase(name: "topic other than the expected app's is 400 DeviceTokenNotForTopic",
                 expectedTopic: Fixture.topic + ".voip",
                 status: 400, reason: "DeviceTokenNotForTopic"),
    ]

    @Test("every APNs request rule answers Apple's status and reason, with an apns-id", arguments: ruleCases)
    func requestRules(_ rule: RuleCase) throws {
        let emulator = try Fixture.emulator(expectedTopic: rule.expectedTopic)
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let stream = try client.submit(path: rule.path, method: rule.method, headers: rule.headers, body: rule.body)
        #expect(client.runUntilClosed([stream]))
        let response = try #require(client.responses[stream])
        #expect(response.status == rule.status)
        #expect(response.reason == rule.reason)
        #expect(response.header("apns-id").flatMap { UUIDKey($0[...].utf8) } != nil)
        #expect(emulator.rejectedCount == 1)
        #expect(emulator.acceptedCount == 0)
        #expect(emulator.receivedNotifications().isEmpty)
    }

    @Test("a client without a certificate is refused during the handshake (curl)")
    func refusesClientWithoutCertificate() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())", clientCertificate: nil)
        #expect(result.status == 0)
        #expect(result.exitCode != 0)
        #expect(eventually { emulator.statistics.handshakeFailures == 1 })
        #expect(emulator.statistics.received == 0)
    }

    @Test("a client certificate from another CA is refused (curl)")
    func refusesForeignCertificate() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())",
                                      clientCertificate: (TestCertificates.otherClientCertificate, TestCertificates.otherClientKey))
        #expect(result.status == 0)
        #expect(result.exitCode != 0)
        #expect(eventually { emulator.statistics.handshakeFailures == 1 })
        #expect(emulator.statistics.received == 0)
    }

    @Test("a client that does not offer h2 is refused (curl --http1.1)")
    func refusesHTTP1() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let result = try Subprocess.run([
            "/usr/bin/curl", "-s", "--http1.1", "--max-time", "10",
            "--cacert", try TestCertificates.path(TestCertificates.caCertificate),
            "--cert", try TestCertificates.path(TestCertificates.clientCertificate),
            "--key", try TestCertificates.path(TestCertificates.clientKey),
            "-o", "/dev/null", "-w", "%{http_code}", "https://localhost:\(emulator.port)/3/device/\(Fixture.token())",
        ])
        #expect(result.standardOutputText == "000")
        #expect(eventually { emulator.statistics.handshakeFailures == 1 })
    }

    struct TokenCase: CustomTestStringConvertible, Sendable {
        enum Token: Sendable { case valid, expired, badSignature, wrongKeyID, wrongTeam, notBearer, missing }
        var name: String
        var token: Token
        var includeTopic = true
        var status: Int
        var reason: String?
        var testDescription: String { name }
    }

    static let tokenCases: [TokenCase] = [
        TokenCase(name: "a fresh valid token is accepted", token: .valid, status: 200),
        TokenCase(name: "a token older than an hour is 403 ExpiredProviderToken", token: .expired, status: 403,
                  reason: "ExpiredProviderToken"),
        TokenCase(name: "a bad signature is 403 InvalidProviderToken", token: .badSignature, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "another kid is 403 InvalidProviderToken", token: .wrongKeyID, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "another team is 403 InvalidProviderToken", token: .wrongTeam, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "a non-bearer authorization is 403 InvalidProviderToken", token: .notBearer, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "no authorization is 403 MissingProviderToken", token: .missing, status: 403,
                  reason: "MissingProviderToken"),
        TokenCase(name: "no topic with token auth is 400 MissingTopic", token: .valid, includeTopic: false, status: 400,
                  reason: "MissingTopic"),
    ]

    @Test("provider token authentication (curl)", arguments: tokenCases)
    func providerTokens(_ tokenCase: TokenCase) throws {
        let emulator = try Fixture.emulator(.token)
        defer { emulator.stop() }
        var headers = tokenCase.includeTopic ? ["apns-topic: \(Fixture.topic)"] : []
        switch tokenCase.token {
        case .valid: headers.append("authorization: bearer \(try Fixture.providerToken())")
        case .expired: headers.append("authorization: bearer \(try Fixture.providerToken(issuedAt: Int(time(nil)) - 3700))")
        case .badSignature: headers.append("authorization: bearer \(try Fixture.providerToken(corruptSignature: true))")
        case .wrongKeyID: headers.append("authorization: bearer \(try Fixture.providerToken(keyID: "OTHERKEY00"))")
        case .wrongTeam: headers.append("authorization: bearer \(try Fixture.providerToken(teamID: "OTHERTEAM0"))")
        case .notBearer: headers.append("authorization: basic \(try Fixture.providerToken())")
        case .missing: break
        }
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())", headers: headers,
                                      clientCertificate: nil)
        #expect(result.status == tokenCase.status, "\(result.standardError)")
        #expect(result.reason == tokenCase.reason)
        if tokenCase.status == 200 {
            #expect(emulator.receivedNotifications().first?.authenticatedAs == Fixture.teamID)
        }
    }

    static let rejectingFaults = APNsFaultToken.table.compactMap { row -> FaultCase? in
        switch row.action {
        case .reject(let status, let reason):
            return FaultCase(code: row.code, status: status, reason: reason.rawValue, retryAfter: nil)
        case .rejectRetryingAfter(let status, let reason, let seconds):
            return FaultCase(code: row.code, status: status, reason: reason.rawValue, retryAfter: String(seconds))
        case .noAnswer, .resetStream, .dropConnection:
            return nil
        }
    }

    struct FaultCase: CustomTestStringConvertible, Sendable {
        var code: UInt8
        var status: Int
        var reason: String
        var retryAfter: String?
        var testDescription: String { "fault code \(code): \(status) \(reason)" }
    }

    @Test("each answering fault token gives its status and reason (curl)", arguments: rejectingFaults)
    func faultTokensThatAnswer(_ fault: FaultCase) throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let token = APNsFaultToken.token(code: fault.code, filler: 7)
        #expect(token.utf8.count == 64)
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(token.uppercased())")
        #expect(result.status == fault.status)
        #expect(result.reason == fault.reason)
        #expect(result.headers["apns-id"] != nil)
        #expect(result.headers["retry-after"] == fault.retryAfter)
        if fault.status == 410 {
            let object = try JSONSerialization.jsonObject(with: Data(result.body.utf8)) as? [String: Any]
            let timestamp = try #require(object?["timestamp"] as? NSNumber).int64Value
            #expect(abs(timestamp - Int64(time(nil)) * 1000) < 60_000)
        }
        #expect(emulator.rejectedCount == 1)
        #expect(emulator.acceptedCount == 0)
    }

    @Test("the no-answer fault token leaves the stream open until the client gives up")
    func faultNoAnswer() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let silent = try client.submit(token: APNsFaultToken.token(code: 0x0e))
        let normal = try client.submit(token: Fixture.token())
        #expect(client.runUntilClosed([normal]))
        #expect(!client.run(timeout: .milliseconds(300)) { client.closedStreams[silent] != nil })
        #expect(client.responses[silent] == nil)
        #expect(emulator.statistics.unanswered == 1)
        // curl, an independent client, times out on it too.
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(APNsFaultToken.token(code: 0x0e))", maxTime: 1)
        #expect(result.status == 0)
        #expect(result.exitCode == 28)
    }

    @Test("the reset fault token resets its stream with INTERNAL_ERROR; the connection stays usable")
    func faultReset() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let reset = try client.submit(token: APNsFaultToken.token(code: 0x0f))
        #expect(client.runUntilClosed([reset]))
        #expect(client.closedStreams[reset] == .internalError)
        #expect(client.responses[reset] == nil)
        let after = try client.submit(token: Fixture.token())
        #expect(client.runUntilClosed([after]))
        #expect(client.responses[after]?.status == 200)
        #expect(emulator.statistics.resetStreams == 1)
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(APNsFaultToken.token(code: 0x0f))")
        #expect(result.status == 0)
        #expect(result.exitCode != 0)
    }

    @Test("the drop fault token closes the connection without answering it")
    func faultDrop() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let first = try client.submit(token: Fixture.token())
        #expect(client.runUntilClosed([first]))
        let dropped = try client.submit(token: APNsFaultToken.token(code: 0x10))
        #expect(client.run { client.connectionClosed })
        #expect(client.responses[first]?.status == 200)
        #expect(client.responses[dropped] == nil)
        #expect(emulator.statistics.droppedConnections == 1)
        #expect(eventually { emulator.statistics.openConnections == 0 })
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(APNsFaultToken.token(code: 0x10))")
        #expect(result.status == 0)
        #expect(result.exitCode != 0)
    }

    @Test("the response delay holds every answer back at least that long")
    func responseDelay() throws {
        let emulator = try Fixture.emulator(behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(150)))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        _ = client.run(timeout: .milliseconds(100)) { !client.announcedMaxStreams.isEmpty }
        let start = ContinuousClock.now
        let streams = try (0..<5).map { try client.submit(token: Fixture.token($0)) }
        #expect(client.runUntilClosed(streams))
        // Only a lower bound: a loaded machine (sanitizers, CI) may answer
        // later than the delay, never earlier. The wait above is bounded.
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        #expect(streams.allSatisfy { client.responses[$0]?.status == 200 })
        let result = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())")
        #expect(result.status == 200)
    }

    @Test("answers held for a long delay do not hold back a later request's shorter delay")
    func shortenedDelay() throws {
        let emulator = try Fixture.emulator(behavior: APNsEmulatorBehavior(responseDelay: .milliseconds(1500)))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        _ = client.run(timeout: .milliseconds(100)) { !client.announcedMaxStreams.isEmpty }
        let start = ContinuousClock.now
        let slow = try client.submit(token: Fixture.token(1))
        // Until the request has reached the emulator, a new delay would apply to it too.
        #expect(client.run(timeout: .seconds(2)) { emulator.statistics.received == 1 })
        emulator.update { $0.responseDelay = .milliseconds(20) }
        let fast = try client.submit(token: Fixture.token(2))
        #expect(client.runUntilClosed([fast]))
        // The behaviour, not the clock: the later request's short delay
        // answered it while the first one is still held.
        #expect(client.responses[slow] == nil)
        #expect(client.runUntilClosed([slow]))
        #expect(ContinuousClock.now - start >= .milliseconds(1500))
        #expect(client.responses[slow]?.status == 200)
        #expect(client.responses[fast]?.status == 200)
    }

    @Test("a forced answer applies to the next N requests only, then requests are accepted again")
    func forcedAnswer() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        emulator.update {
            $0.forcedAction = .reject(.serviceUnavailable)
            $0.forcedCount = 2
        }
        let client = try TestClient(port: emulator.port)
        var statuses: [Int] = []
        for index in 0..<4 {
            let stream = try client.submit(token: Fixture.token(index))
            #expect(client.runUntilClosed([stream]))
            statuses.append(client.responses[stream]?.status ?? 0)
        }
        #expect(statuses == [503, 503, 200, 200])
        emulator.setBehavior(APNsEmulatorBehavior(forcedAction: .reject(status: 500, reason: .internalServerError)))
        let stream = try client.submit(token: Fixture.token(9))
        #expect(client.runUntilClosed([stream]))
        #expect(client.responses[stream]?.status == 500)
        #expect(client.responses[stream]?.reason == "InternalServerError")
    }

    @Test("an apns-id accepted twice is counted as a duplicate; reset() clears counters, records and ledger")
    func duplicateLedger() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let headers = [("apns-topic", Fixture.topic), ("apns-id", "0F0E0D0C-0B0A-4908-8706-050403020100")]
        let first = try client.submit(headers: headers)
        let second = try client.submit(headers: headers)
        #expect(client.runUntilClosed([first, second]))
        #expect(emulator.acceptedCount == 2)
        #expect(emulator.duplicateAPNsIDs == 1)
        emulator.reset()
        #expect(emulator.statistics == APNsEmulatorStatistics(
            received: 0, accepted: 0, rejected: 0, unanswered: 0, resetStreams: 0, droppedConnections: 0,
            duplicateAPNsIDs: 0, connections: 0, openConnections: 1, handshakeFailures: 0))
        #expect(emulator.receivedNotifications().isEmpty)
        let third = try client.submit(headers: headers)
        #expect(client.runUntilClosed([third]))
        #expect(emulator.duplicateAPNsIDs == 0)
    }

    @Test("onNotification sees every accepted notification")
    func observer() throws {
        let emulator = try Fixture.emulator(record: false)
        defer { emulator.stop() }
        let seen = Locked<[String]>([])
        emulator.onNotification = { notification in seen.withLock { $0.append(notification.deviceToken) } }
        let client = try TestClient(port: emulator.port)
        let streams = try (0..<3).map { try client.submit(token: Fixture.token($0)) }
        let rejected = try client.submit(token: "abc")
        #expect(client.runUntilClosed(streams + [rejected]))
        #expect(seen.withLock { $0 } == (0..<3).map { Fixture.token($0) })
        #expect(emulator.receivedNotifications().isEmpty)
    }

    @Test("10,000 requests from h2load (4 connections, 100 streams each, 2 loop threads) are all accepted and counted exactly",
          .timeLimit(.minutes(2)))
    func h2loadTenThousand() throws {
        let emulator = try Fixture.emulator(.none, record: false, threads: 2)
        defer { emulator.stop() }
        let payloadFile = FileManager.default.temporaryDirectory.appendingPathComponent("h2load-\(UUID().uuidString).json")
        try Data(Fixture.payload).write(to: payloadFile)
        defer { try? FileManager.default.removeItem(at: payloadFile) }
        let result = try Subprocess.run([
            "/usr/bin/timeout", "90", "/usr/bin/h2load", "-n", "10000", "-c", "4", "-m", "100",
            "-d", payloadFile.path, "--header=apns-topic: \(Fixture.topic)", "--header=apns-push-type: alert",
            "https://127.0.0.1:\(emulator.port)/3/device/\(Fixture.token())",
        ])
        #expect(result.status == 0, "\(result.standardErrorText)")
        #expect(result.standardOutputText.contains("10000 succeeded"), "\(result.standardOutputText)")
        #expect(result.standardOutputText.contains("status codes: 10000 2xx"))
        #expect(emulator.acceptedCount == 10_000)
        #expect(emulator.rejectedCount == 0)
        #expect(emulator.duplicateAPNsIDs == 0)
        #expect(emulator.statistics.received == 10_000)
        #expect(emulator.connectionCount == 4)
    }
}
