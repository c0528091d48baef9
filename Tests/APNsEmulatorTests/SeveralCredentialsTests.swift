import APNsCore
@testable import APNsEmulator
import Glibc
import TestSupport
import Testing

/// Several apps, emulator side: one emulator serving several apps checks
/// every notification against the credential it came with, over TLS with the
/// test HTTP/2 client.
@Suite("Several provider keys and client certificates", .timeLimit(.minutes(1)))
struct SeveralCredentialsTests {
    struct TokenCase: CustomTestStringConvertible, Sendable {
        var name: String
        var environment: APNsEnvironment = .production
        var topic: String = Fixture.topic
        var token: @Sendable () throws -> String
        var status: Int
        var reason: String?
        /// The team and key recorded for an accepted notification.
        var accepted: TestKeys.Key?
        var testDescription: String { name }
    }

    static let now = Int(time(nil))

    static let tokenCases: [TokenCase] = [
        TokenCase(name: "the script's team key is accepted in production", token: { try TestKeys.team.token() },
                  status: 200, accepted: TestKeys.team),
        TokenCase(name: "another team's production key is accepted in production",
                  token: { try TestKeys.otherTeam.token() }, status: 200, accepted: TestKeys.otherTeam),
        TokenCase(name: "a topic-specific key is accepted for its topic", topic: TestKeys.secondTopic,
                  token: { try TestKeys.topicKey.token() }, status: 200, accepted: TestKeys.topicKey),
        TokenCase(name: "a sandbox key is accepted by the development emulator", environment: .development,
                  token: { try TestKeys.sandbox.token() }, status: 200, accepted: TestKeys.sandbox),
        TokenCase(name: "the team key for both environments is accepted by the development emulator",
                  environment: .development, token: { try TestKeys.team.token() }, status: 200,
                  accepted: TestKeys.team),
        TokenCase(name: "an unknown kid is 403 InvalidProviderToken",
                  token: { try TestKeys.team.token(keyID: "UNKNOWN999") }, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "a known kid with another team's iss is 403 InvalidProviderToken",
                  token: { try TestKeys.otherTeam.token(teamID: Fixture.teamID) }, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "a kid signed by another known key is 403 InvalidProviderToken",
                  token: { try TestKeys.otherTeam.token(signedWith: TestKeys.team) }, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "a corrupted signature is 403 InvalidProviderToken",
                  token: { try TestKeys.otherTeam.token(corruptSignature: true) }, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "an iat over an hour old is 403 ExpiredProviderToken",
                  token: { try TestKeys.otherTeam.token(issuedAt: now - 3700) }, status: 403,
                  reason: "ExpiredProviderToken"),
        TokenCase(name: "an iat ten minutes ahead is 403 InvalidProviderToken",
                  token: { try TestKeys.otherTeam.token(issuedAt: now + 600) }, status: 403,
                  reason: "InvalidProviderToken"),
        TokenCase(name: "a sandbox key in production is 403 BadEnvironmentKeyInToken",
                  token: { try TestKeys.sandbox.token() }, status: 403, reason: "BadEnvironmentKeyInToken"),
        TokenCase(name: "a production key in development is 403 BadEnvironmentKeyInToken", environment: .development,
                  token: { try TestKeys.otherTeam.token() }, status: 403, reason: "BadEnvironmentKeyInToken"),
        TokenCase(name: "a topic-specific key for a topic it does not cover is 400 TopicDisallowed",
                  token: { try TestKeys.topicKey.token() }, status: 400, reason: "TopicDisallowed"),
    ]

    @Test("each token is judged by its own key", arguments: tokenCases)
    func tokens(_ tokenCase: TokenCase) throws {
        let emulator = try Fixture.emulator(
            .providerKeys([TestKeys.team, TestKeys.otherTeam, TestKeys.sandbox, TestKeys.topicKey]),
            environment: tokenCase.environment)
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let token = try tokenCase.token()
        let stream = try client.submit(headers: [
            ("apns-topic", tokenCase.topic), ("authorization", "bearer " + token),
        ])
        #expect(client.runUntilClosed([stream]))
        let response = try #require(client.responses[stream])
        #expect(response.status == tokenCase.status)
        #expect(response.reason == tokenCase.reason)
        let received = emulator.receivedNotifications()
        if let key = tokenCase.accepted {
            #expect(received.count == 1)
            #expect(received.first?.authenticatedAs == key.teamID)
            #expect(received.first?.providerKeyID == key.keyID)
            #expect(received.first?.topic == tokenCase.topic)
            #expect(received.first?.jsonLine.contains(#""key_id":"\#(key.keyID)""#) == true)
            // The token by its fingerprint only: 16 hex digits of its SHA-256.
            let fingerprint = try #require(received.first?.providerTokenFingerprint)
            #expect(fingerprint.count == 16 && fingerprint.allSatisfy(\.isHexDigit))
            #expect(received.first?.jsonLine.contains(#""token_fingerprint":"\#(fingerprint)""#) == true)
            #expect(received.first?.jsonLine.contains(token) == false)
        } else {
            #expect(received.isEmpty)
            #expect(emulator.rejectedCount == 1)
        }
    }

    @Test("several keys on one connection: the first key taken binds it, another key's token is 403 UnrelatedKeyIdInToken, each verdict cached apart")
    func severalTokensOnOneConnection() throws {
        let emulator = try Fixture.emulator(.providerKeys([TestKeys.team, TestKeys.otherTeam, TestKeys.sandbox]))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let tokens = [try TestKeys.team.token(), try TestKeys.otherTeam.token(), try TestKeys.sandbox.token()]
        var streams: [Int32] = []
        for _ in 0..<2 {
            for token in tokens {
                streams.append(try client.submit(headers: [("apns-topic", Fixture.topic),
                                                           ("authorization", "bearer " + token)]))
            }
        }
        #expect(client.runUntilClosed(streams))
        let statuses = streams.map { client.responses[$0]?.status }
        #expect(statuses == [200, 403, 403, 200, 403, 403])
        let reasons = streams.map { client.responses[$0]?.reason }
        #expect(reasons == [nil, "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken",
                            nil, "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken"])
        #expect(emulator.receivedNotifications().map(\.providerKeyID) == [Fixture.keyID, Fixture.keyID])
    }

    /// One request at a time on each connection, so the order is the one
    /// the emulator sees.
    @Test("each connection is bound to the key of the first token it took; a refused token binds nothing",
          arguments: [
              // (keys in the order sent, statuses, reasons)
              ([TestKeys.otherTeam, TestKeys.team, TestKeys.otherTeam], [200, 403, 200],
               [nil, "UnrelatedKeyIdInToken", nil]),
              ([TestKeys.team, TestKeys.otherTeam], [200, 403], [nil, "UnrelatedKeyIdInToken"]),
              ([TestKeys.sandbox, TestKeys.otherTeam, TestKeys.team], [403, 200, 403],
               ["BadEnvironmentKeyInToken", nil, "UnrelatedKeyIdInToken"]),
          ] as [([TestKeys.Key], [Int], [String?])])
    func connectionBoundToFirstKey(keys: [TestKeys.Key], statuses: [Int], reasons: [String?]) throws {
        let emulator = try Fixture.emulator(.providerKeys([TestKeys.team, TestKeys.otherTeam, TestKeys.sandbox]))
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        var answers: [(Int?, String?)] = []
        for key in keys {
            let stream = try client.submit(headers: [("apns-topic", Fixture.topic),
                                                     ("authorization", "bearer " + (try key.token()))])
            #expect(client.runUntilClosed([stream]))
            answers.append((client.responses[stream]?.status, client.responses[stream]?.reason))
        }
        #expect(answers.map(\.0) == statuses)
        #expect(answers.map(\.1) == reasons)
        // A new connection is bound to its own first key.
        let fresh = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let stream = try fresh.submit(headers: [("apns-topic", Fixture.topic),
                                                ("authorization", "bearer " + (try keys.last!.token()))])
        #expect(fresh.runUntilClosed([stream]))
        #expect(fresh.responses[stream]?.status == 200)
        #expect(Set(emulator.receivedNotifications().map(\.connectionID)).count == 2)
    }

    struct CertificateCase: CustomTestStringConvertible, Sendable {
        var name: String
        var certificate: String
        var key: String
        var topic: String?
        var status: Int
        var reason: String?
        var testDescription: String { name }
    }

    static let certificateCases: [CertificateCase] = [
        CertificateCase(name: "the first app's certificate (first CA) sends to its topic",
                        certificate: TestCertificates.clientCertificate, key: TestCertificates.clientKey,
                        topic: Fixture.topic, status: 200),
        CertificateCase(name: "the second app's certificate (second CA) sends to its topic",
                        certificate: TestKeys.secondClientCertificate, key: TestKeys.secondClientKey,
                        topic: TestKeys.secondTopic, status: 200),
        CertificateCase(name: "the second app's certificate without apns-topic sends to its own UID",
                        certificate: TestKeys.secondClientCertificate, key: TestKeys.secondClientKey,
                        topic: nil, status: 200),
        CertificateCase(name: "the first app's certificate for the second app's topic is 400 TopicDisallowed",
                        certificate: TestCertificates.clientCertificate, key: TestCertificates.clientKey,
                        topic: TestKeys.secondTopic, status: 400, reason: "TopicDisallowed"),
        CertificateCase(name: "the second app's certificate for the first app's topic is 400 TopicDisallowed",
                        certificate: TestKeys.secondClientCertificate, key: TestKeys.secondClientKey,
                        topic: Fixture.topic, status: 400, reason: "TopicDisallowed"),
    ]

    @Test("two client certificates from two CAs in one --client-ca file: each accepted, each held to its own topic",
          arguments: certificateCases)
    func certificatesFromTwoCAs(_ certificateCase: CertificateCase) throws {
        let emulator = try Fixture.emulator(.clientCertificateAuthorities(TestKeys.twoCAs))
        defer { emulator.stop() }
        _ = try TestKeys.directory()
        let client = try TestClient(port: emulator.port, certificate: certificateCase.certificate,
                                    key: certificateCase.key)
        let stream = try client.submit(headers: certificateCase.topic.map { [("apns-topic", $0)] } ?? [])
        #expect(client.runUntilClosed([stream]))
        let response = try #require(client.responses[stream])
        #expect(response.status == certificateCase.status)
        #expect(response.reason == certificateCase.reason)
        if certificateCase.status == 200 {
            let uid = certificateCase.certificate == TestKeys.secondClientCertificate
                ? TestKeys.secondTopic : Fixture.topic
            #expect(emulator.receivedNotifications().first?.authenticatedAs == uid)
            #expect(emulator.receivedNotifications().first?.topic == uid)
        }
    }
}
