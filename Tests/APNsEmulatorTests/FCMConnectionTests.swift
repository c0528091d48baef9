@testable import APNsEmulator
import FCMCore
import Foundation
import Glibc
import JSON
import Testing
import TestSupport

@Suite("FCM over a connection", .serialized)
struct FCMConnectionTests {
    static let sendPath = "/v1/projects/\(FCMFixture.project)/messages:send"

    static func emulator(tokenLifetime: Int = 3600) throws -> APNsEmulator {
        var configuration = try Fixture.configuration()
        configuration.fcm = FCMEmulatorConfiguration(serviceAccounts: [try FCMFixture.account()],
                                                     tokenLifetime: tokenLifetime, recordMessages: true)
        let emulator = try APNsEmulator(configuration: configuration)
        try emulator.start()
        return emulator
    }

    /// Sends one request and waits for its answer.
    static func exchange(_ client: TestClient, method: String = "POST", path: String,
                         headers: [(name: String, value: String)], body: [UInt8]) throws -> TestClient.Response? {
        let stream = try client.submit(path: path, method: method, headers: headers, body: body)
        client.run { client.responses[stream] != nil && client.closedStreams[stream] != nil }
        return client.responses[stream]
    }

    static func accessToken(_ client: TestClient) throws -> (status: Int, token: String?) {
        let jwt = try FCMFixture.assertion(for: FCMFixture.account(), now: Int(time(nil)))
        let response = try #require(try exchange(client, path: "/token",
                                                 headers: [("content-type", ServiceAccountAssertion.contentType)],
                                                 body: FCMFixture.tokenRequestBody(jwt)))
        guard case .token(let token) = OAuthTokenAnswer(status: response.status, body: response.body) else {
            return (response.status, nil)
        }
        return (response.status, token.value)
    }

    static func send(_ client: TestClient, bearer: String, token: String = FCMFixture.registrationToken)
        throws -> TestClient.Response? {
        try exchange(client, path: sendPath,
                     headers: [("authorization", "Bearer " + bearer), ("content-type", "application/json")],
                     body: FCMFixture.message(token: token))
    }

    @Test("a client without a certificate gets a token, sends, and is recorded; APNs on it is 403 MissingProviderToken")
    func tokenThenSend() throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let (status, token) = try Self.accessToken(client)
        #expect(status == 200)
        let bearer = try #require(token)
        let answer = try #require(try Self.send(client, bearer: bearer))
        #expect(answer.status == 200)
        #expect(fcmMessageName(answer.body)?.hasPrefix("projects/\(FCMFixture.project)/messages/") == true)
        let records = emulator.receivedFCMMessages()
        #expect(records.count == 1)
        #expect(records.first?.token == FCMFixture.registrationToken)
        #expect(records.first?.data == ["p": "abc", "x": "1"])
        #expect(records.first?.jsonLine.contains("<redacted>") == true)
        #expect(records.first?.jsonLine.contains(bearer) == false)
        #expect(records.first?.accessTokenFingerprint == EmulatorWorker.tokenFingerprint("Bearer " + bearer))

        // validate_only: checked and answered, not delivered.
        let checked = try #require(try Self.exchange(
            client, path: Self.sendPath,
            headers: [("authorization", "Bearer " + bearer), ("content-type", "application/json")],
            body: Array(#"{"validate_only":true,"message":{"topic":"news"}}"#.utf8)))
        #expect(checked.status == 200)
        #expect(fcmMessageName(checked.body) == "projects/\(FCMFixture.project)/messages/fake_message_id")
        #expect(emulator.receivedFCMMessages().count == 1)
        let get = try #require(try Self.exchange(client, method: "GET", path: "/token", headers: [], body: []))
        #expect(get.status == 405)

        let apns = try #require(try Self.exchange(client, path: "/3/device/\(Fixture.token())",
                                                  headers: [("apns-topic", Fixture.topic)], body: Fixture.payload))
        #expect(apns.status == 403)
        #expect(apns.reason == "MissingProviderToken")
        #expect(emulator.fcmStatistics == FCMEmulatorStatistics(tokenRequests: 1, tokensIssued: 1, tokenRefusals: 0,
                                                                received: 2, accepted: 1, rejected: 0, unanswered: 0))

        // A certificate still rules its connection for APNs.
        let certified = try TestClient(port: emulator.port)
        let accepted = try #require(try Self.exchange(certified, path: "/3/device/\(Fixture.token())",
                                                      headers: [("apns-topic", Fixture.topic)], body: Fixture.payload))
        #expect(accepted.status == 200)
    }

    @Test("faults by token: 401 once then accepted, a rejection with retry-after, no answer")
    func faults() throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let bearer = try #require(try Self.accessToken(client).token)
        let once = FCMFaultToken.token(code: 0x09)
        #expect(try Self.send(client, bearer: bearer, token: once)?.status == 401)
        #expect(try Self.send(client, bearer: bearer, token: once)?.status == 200)
        let quota = try #require(try Self.send(client, bearer: bearer, token: FCMFaultToken.token(code: 0x05)))
        #expect(quota.status == 429)
        #expect(quota.header("retry-after") == "30")
        let silent = try client.submit(path: Self.sendPath,
                                       headers: [("authorization", "Bearer " + bearer), ("content-type", "application/json")],
                                       body: FCMFixture.message(token: FCMFaultToken.token(code: 0x0a)))
        #expect(!client.run(timeout: .milliseconds(300)) { client.responses[silent] != nil })
        #expect(emulator.fcmStatistics.unanswered == 1)
        #expect(emulator.receivedFCMMessages().count == 1)
    }

    @Test("a revoked key is refused at run time; an expired access token is 401")
    func revokeAndExpiry() throws {
        let emulator = try Self.emulator(tokenLifetime: 1)
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let bearer = try #require(try Self.accessToken(client).token)
        emulator.update { $0.fcmRevokedKeyIDs = [FCMFixture.keyID] }
        #expect(try Self.accessToken(client).status == 400)
        #expect(emulator.fcmStatistics.tokenRefusals == 1)
        emulator.update { $0.fcmRevokedKeyIDs = [] }
        #expect(try Self.accessToken(client).status == 200)
        Thread.sleep(forTimeInterval: 2.1)
        #expect(try Self.send(client, bearer: bearer)?.status == 401)
        emulator.reset()
        #expect(emulator.fcmStatistics.tokenRequests == 0)
    }
}
