import Glibc
import Testing
import TestSupport
@testable import APNsEmulator

/// The end-to-end tests run ONE emulator per environment for apps with client
/// certificates and apps with provider keys, as one APNs host serves both:
/// per connection, a verified client certificate rules, else provider tokens.
@Suite("Client certificates and provider tokens in one emulator", .timeLimit(.minutes(1)))
struct CertificateOrTokenTests {
    /// Both CAs of the two certificate apps, and every test key.
    static let combined = Fixture.Authentication.clientCertificateOrProviderKeys(
        TestKeys.twoCAs, [TestKeys.team, TestKeys.otherTeam, TestKeys.sandbox, TestKeys.topicKey])

    struct ConnectionCase: CustomTestStringConvertible, Sendable {
        var name: String
        /// The client certificate and key; nil: a connection without one.
        var certificate: (String, String)?
        var topic: String = Fixture.topic
        var authorization: (@Sendable () throws -> String)?
        var status: Int
        var reason: String?
        /// What the record says delivered it: the certificate's UID or the
        /// key's team, and the key id (nil for a certificate).
        var authenticatedAs: String?
        var keyID: String?
        var testDescription: String { name }
    }

    static let now = Int(time(nil))
    static let firstApp = (TestCertificates.clientCertificate, TestCertificates.clientKey)
    static let secondApp = (TestKeys.secondClientCertificate, TestKeys.secondClientKey)

    static let cases: [ConnectionCase] = [
        ConnectionCase(name: "the first app's certificate (first CA) sends to its UID",
                       certificate: firstApp, status: 200, authenticatedAs: Fixture.topic),
        ConnectionCase(name: "the second app's certificate (second CA) sends to its UID",
                       certificate: secondApp, topic: TestKeys.secondTopic, status: 200,
                       authenticatedAs: TestKeys.secondTopic),
        ConnectionCase(name: "a certificate for another app's topic is 400 TopicDisallowed",
                       certificate: firstApp, topic: TestKeys.secondTopic, status: 400, reason: "TopicDisallowed"),
        ConnectionCase(name: "an authorization header on a certificate connection is ignored, as APNs ignores it",
                       certificate: firstApp, authorization: { "bearer not.a.token" }, status: 200,
                       authenticatedAs: Fixture.topic),
        ConnectionCase(name: "a valid token does not widen a certificate connection to another topic",
                       certificate: firstApp, topic: TestKeys.secondTopic,
                       authorization: { "bearer " + (try TestKeys.topicKey.token()) }, status: 400,
                       reason: "TopicDisallowed"),
        ConnectionCase(name: "without a certificate, a valid team key token is accepted",
                       authorization: { "bearer " + (try TestKeys.team.token()) }, status: 200,
                       authenticatedAs: TestKeys.team.teamID, keyID: TestKeys.team.keyID),
        ConnectionCase(name: "without a certificate, a topic-specific key is accepted for its topic",
                       topic: TestKeys.secondTopic, authorization: { "bearer " + (try TestKeys.topicKey.token()) },
                       status: 200, authenticatedAs: TestKeys.topicKey.teamID, keyID: TestKeys.topicKey.keyID),
        ConnectionCase(name: "without a certificate or a token, 403 MissingProviderToken",
                       status: 403, reason: "MissingProviderToken"),
        ConnectionCase(name: "without a certificate, a corrupted signature is 403 InvalidProviderToken",
                       authorization: { "bearer " + (try TestKeys.otherTeam.token(corruptSignature: true)) },
                       status: 403, reason: "InvalidProviderToken"),
        ConnectionCase(name: "without a certificate, an iat over an hour old is 403 ExpiredProviderToken",
                       authorization: { "bearer " + (try TestKeys.team.token(issuedAt: now - 3700)) },
                       status: 403, reason: "ExpiredProviderToken"),
        ConnectionCase(name: "without a certificate, a sandbox key in production is 403 BadEnvironmentKeyInToken",
                       authorization: { "bearer " + (try TestKeys.sandbox.token()) },
                       status: 403, reason: "BadEnvironmentKeyInToken"),
        ConnectionCase(name: "without a certificate, a topic-specific key for another topic is 400 TopicDisallowed",
                       authorization: { "bearer " + (try TestKeys.topicKey.token()) },
                       status: 400, reason: "TopicDisallowed"),
    ]

    @Test("each connection is judged by the credential it brought", arguments: cases)
    func connection(_ connectionCase: ConnectionCase) throws {
        let emulator = try Fixture.emulator(Self.combined)
        defer { emulator.stop() }
        _ = try TestKeys.directory()
        let client = try TestClient(port: emulator.port, certificate: connectionCase.certificate?.0,
                                    key: connectionCase.certificate?.1)
        var headers = [("apns-topic", connectionCase.topic)]
        if let authorization = connectionCase.authorization { headers.append(("authorization", try authorization())) }
        let stream = try client.submit(headers: headers)
        #expect(client.runUntilClosed([stream]))
        let response = try #require(client.responses[stream])
        #expect(response.status == connectionCase.status)
        #expect(response.reason == connectionCase.reason)
        let received = emulator.receivedNotifications()
        if connectionCase.status == 200 {
            let record = try #require(received.first)
            #expect(received.count == 1)
            #expect(record.topic == connectionCase.topic)
            #expect(record.authenticatedAs == connectionCase.authenticatedAs)
            #expect(record.providerKeyID == connectionCase.keyID)
            #expect(record.jsonLine.contains(#""key_id""#) == (connectionCase.keyID != nil))
        } else {
            #expect(received.isEmpty)
            #expect(emulator.rejectedCount == 1)
        }
        #expect(emulator.statistics.handshakeFailures == 0)
    }

    @Test("a certificate connection and a token connection side by side each deliver on their own credential")
    func sideBySide() throws {
        let emulator = try Fixture.emulator(Self.combined)
        defer { emulator.stop() }
        _ = try TestKeys.directory()
        let certificateClient = try TestClient(port: emulator.port, certificate: TestKeys.secondClientCertificate,
                                               key: TestKeys.secondClientKey)
        let tokenClient = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let token = "bearer " + (try TestKeys.otherTeam.token())
        var certificateStreams: [Int32] = []
        var tokenStreams: [Int32] = []
        for index in 0..<3 {
            certificateStreams.append(try certificateClient.submit(
                token: Fixture.token(index), headers: [("apns-topic", TestKeys.secondTopic)]))
            tokenStreams.append(try tokenClient.submit(
                token: Fixture.token(10 + index), headers: [("apns-topic", Fixture.topic), ("authorization", token)]))
        }
        #expect(certificateClient.runUntilClosed(certificateStreams))
        #expect(tokenClient.runUntilClosed(tokenStreams))
        #expect((certificateStreams.map { certificateClient.responses[$0]?.status })
            + tokenStreams.map { tokenClient.responses[$0]?.status } == Array(repeating: 200, count: 6))
        let records = emulator.receivedNotifications()
        let byCertificate = records.filter { $0.providerKeyID == nil }
        let byToken = records.filter { $0.providerKeyID != nil }
        #expect(byCertificate.count == 3)
        #expect(byCertificate.allSatisfy { $0.authenticatedAs == TestKeys.secondTopic && $0.topic == TestKeys.secondTopic })
        #expect(byToken.count == 3)
        #expect(byToken.allSatisfy {
            $0.providerKeyID == TestKeys.otherTeam.keyID && $0.authenticatedAs == TestKeys.otherTeam.teamID
                && $0.topic == Fixture.topic
        })
        #expect(Set(byCertificate.map(\.connectionID)).count == 1)
        #expect(Set(byToken.map(\.connectionID)).count == 1)
        #expect(byCertificate.first?.connectionID != byToken.first?.connectionID)
    }

    @Test("a certificate from a CA not in the --client-ca file is refused at the handshake (curl)")
    func refusesForeignCertificate() throws {
        let emulator = try Fixture.emulator(Self.combined)
        defer { emulator.stop() }
        _ = try TestKeys.directory()
        // A valid token does not rescue it: the handshake fails first.
        let result = try Curl.request(
            port: emulator.port, path: "/3/device/\(Fixture.token())",
            headers: ["apns-topic: \(Fixture.topic)", "authorization: bearer \(try TestKeys.team.token())"],
            clientCertificate: (TestKeys.strangerClientCertificate, TestKeys.strangerClientKey))
        #expect(result.status == 0)
        #expect(result.exitCode != 0)
        #expect(eventually { emulator.statistics.handshakeFailures == 1 })
        #expect(emulator.statistics.received == 0)
    }

    @Test("with one CA and a key, a certificate of the other CA is refused at the handshake too (curl)")
    func refusesCertificateOfTheOtherCA() throws {
        let emulator = try Fixture.emulator(.clientCertificateOrProviderKeys(TestCertificates.caCertificate,
                                                                             [TestKeys.team]))
        defer { emulator.stop() }
        let refused = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())",
                                       headers: ["apns-topic: \(TestKeys.secondTopic)"],
                                       clientCertificate: (TestKeys.secondClientCertificate, TestKeys.secondClientKey))
        #expect(refused.status == 0)
        #expect(eventually { emulator.statistics.handshakeFailures == 1 })
        // The same emulator takes a certificate of its own CA…
        let accepted = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())",
                                        headers: ["apns-topic: \(Fixture.topic)"])
        #expect(accepted.status == 200, "\(accepted.standardError)")
        // …and a token connection.
        let byToken = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())",
                                       headers: ["apns-topic: \(Fixture.topic)",
                                                 "authorization: bearer \(try TestKeys.team.token())"],
                                       clientCertificate: nil)
        #expect(byToken.status == 200, "\(byToken.standardError)")
        #expect(emulator.receivedNotifications().map(\.providerKeyID) == [nil, TestKeys.team.keyID])
    }

    @Test("a CA file without provider keys is refused at start, not at every request")
    func needsKeys() throws {
        let configuration = try Fixture.configuration(.clientCertificateOrProviderKeys(TestKeys.twoCAs, []))
        let error = #expect(throws: APNsEmulatorError.self) { _ = try APNsEmulator(configuration: configuration) }
        #expect(error?.description.contains("needs at least one provider key") == true)
    }
}
