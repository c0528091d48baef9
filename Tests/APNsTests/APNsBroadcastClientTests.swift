import APNsCore
import APNsEmulator
import Dispatch
import EventLoop
import HTTPCore
import Testing
import TestSupport
import TLS
@testable import APNs

/// Broadcast API calls through the client: a broadcast over the
/// notification host's pool, channel management over a pool of its own to
/// the channel management host; APNs' fields and body come back as sent.
@Suite("APNs client: broadcast API calls", .serialized)
struct APNsBroadcastClientTests {
    static let requestID = "0b7e3c5a-1f2d-4c6b-9a8e-7d6c5b4a3f21"

    static func send(_ client: LoopClient, _ request: APNsBroadcastRequest) throws -> APNsBroadcastAnswer {
        let box = ResultBox<APNsBroadcastAnswer>()
        let done = DispatchSemaphore(value: 0)
        let transfer = UnsafeTransfer(box)
        client.onLoop { apns in
            apns.send(request) { answer in
                transfer.value.value = answer
                done.signal()
            }
        }
        guard done.wait(timeout: .now() + 10) == .success, let answer = box.value else {
            throw HarnessError(description: "no answer")
        }
        return answer
    }

    static func request(_ host: APNsBroadcastHost, method: String, path: String, headers: [HTTPField],
                        body: String = "") -> APNsBroadcastRequest {
        APNsBroadcastRequest(host: host, environment: .production, credential: .primary, method: method, path: path,
                             headers: headers, body: Array(body.utf8))
    }

    @Test("channel management goes to its host, a broadcast to the notification host; answers pass back as sent")
    func hosts() throws {
        let notifications = try Fixtures.certificateEmulator()
        defer { notifications.stop() }
        let channels = try Fixtures.certificateEmulator()
        defer { channels.stop() }
        let catalog = APNsCredentialCatalog(caFile: try TestCertificates.path(TestCertificates.caCertificate))
        catalog.add(.primary, .certificate(try Fixtures.clientIdentity()))
        var settings = APNsSettings()
        settings.productionHost = HostAndPort(host: "127.0.0.1", port: notifications.port)
        settings.broadcastProductionHost = HostAndPort(host: "127.0.0.1", port: channels.port)
        let client = try LoopClient(APNsClientConfiguration(settings, credentials: catalog))
        let bundle = TestCertificates.bundleID

        let created = try Self.send(client, Self.request(
            .channelManagement, method: "POST", path: "/1/apps/\(bundle)/channels",
            headers: [HTTPField(name: "apns-request-id", value: Self.requestID)],
            body: #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#))
        guard case .answered(201, let fields, let body) = created else {
            Issue.record("create: \(created)")
            return
        }
        #expect(body.isEmpty)
        #expect(fields.map(\.name).sorted() == ["apns-channel-id", "apns-request-id"])
        #expect(fields.first { $0.name == "apns-request-id" }?.value == Self.requestID)
        let channel = try #require(fields.first { $0.name == "apns-channel-id" }?.value)
        #expect(channels.channelIDs(bundleID: bundle) == [channel])
        #expect(notifications.channelIDs(bundleID: bundle).isEmpty)

        let read = try Self.send(client, Self.request(
            .channelManagement, method: "GET", path: "/1/apps/\(bundle)/channels",
            headers: [HTTPField(name: "apns-channel-id", value: channel)]))
        guard case .answered(200, _, let settingsJSON) = read else {
            Issue.record("read: \(read)")
            return
        }
        #expect(String(decoding: settingsJSON, as: UTF8.self) == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)

        // The notification host has no such channel: its own answer, passed back.
        let broadcast = try Self.send(client, Self.request(
            .notifications, method: "POST", path: "/4/broadcasts/apps/\(bundle)",
            headers: [HTTPField(name: "apns-channel-id", value: channel),
                      HTTPField(name: "apns-push-type", value: "liveactivity")],
            body: #"{"aps":{"event":"update"}}"#))
        guard case .answered(400, _, let refusal) = broadcast else {
            Issue.record("broadcast: \(broadcast)")
            return
        }
        #expect(String(decoding: refusal, as: UTF8.self) == #"{"reason":"ChannelNotRegistered"}"#)
        #expect(notifications.statistics.connections == 1)
        #expect(channels.statistics.connections == 1)
        #expect(client.status.connections == [.ready: 2])
        #expect(client.shutdown())
    }

    @Test("no connection: the call fails with the outcome a notification would")
    func unreachable() throws {
        let catalog = APNsCredentialCatalog(caFile: try TestCertificates.path(TestCertificates.caCertificate))
        catalog.add(.primary, .certificate(try Fixtures.clientIdentity()))
        var settings = APNsSettings()
        settings.broadcastProductionHost = HostAndPort(host: "127.0.0.1", port: 1)
        settings.connectTimeout = .seconds(2)
        let client = try LoopClient(APNsClientConfiguration(settings, credentials: catalog))
        let answer = try Self.send(client, Self.request(.channelManagement, method: "GET",
                                                        path: "/1/apps/a.b/all-channels", headers: []))
        guard case .failed(let outcome) = answer, case .connectFailed = outcome else {
            Issue.record("answer: \(answer)")
            return
        }
        #expect(client.shutdown())
    }
}
