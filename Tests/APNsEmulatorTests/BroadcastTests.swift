import APNsCore
@testable import APNsEmulator
import Foundation
import Testing

@Suite("The emulator's broadcast API", .serialized)
struct BroadcastTests {
    static let bundle = Fixture.topic
    static let channelsPath = "/1/apps/\(bundle)/channels"
    static let broadcastPath = "/4/broadcasts/apps/\(bundle)"
    static let payload = Array(#"{"aps":{"event":"update","content-state":{"score":1}}}"#.utf8)
    static let requestID = "0b7e3c5a-1f2d-4c6b-9a8e-7d6c5b4a3f21"

    static func exchange(_ client: TestClient, _ method: String, _ path: String,
                         _ headers: [(name: String, value: String)] = [], body: [UInt8] = []) throws -> TestClient.Response {
        let stream = try client.submit(path: path, method: method, headers: headers, body: body)
        client.run { client.responses[stream] != nil && client.closedStreams[stream] != nil }
        return try #require(client.responses[stream])
    }

    static func create(_ client: TestClient, policy: Int = 1, bundle: String = bundle) throws -> TestClient.Response {
        try exchange(client, "POST", "/1/apps/\(bundle)/channels", [("apns-request-id", requestID)],
                     body: Array(#"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"#.utf8))
    }

    static func broadcast(_ channel: String) -> [(name: String, value: String)] {
        [("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-priority", "10")]
    }

    @Test("create, read, list, broadcast, delete: Apple's statuses and fields; the broadcast recorded")
    func lifecycle() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let created = try Self.create(client)
        #expect(created.status == 201)
        #expect(created.header("apns-request-id") == Self.requestID)
        let channel = try #require(created.header("apns-channel-id"))
        #expect(APNsChannelID.isWellFormed(channel) && channel.utf8.count == 24)

        let read = try Self.exchange(client, "GET", Self.channelsPath, [("apns-channel-id", channel)])
        #expect(read.status == 200)
        #expect(String(decoding: read.body, as: UTF8.self) == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        #expect(read.header("apns-request-id") != nil)
        let all = try Self.exchange(client, "GET", "/1/apps/\(Self.bundle)/all-channels")
        #expect(String(decoding: all.body, as: UTF8.self) == "{\"channels\":[\"\(channel)\"]}")
        #expect(emulator.channelIDs(bundleID: Self.bundle) == [channel])

        let sent = try Self.exchange(client, "POST", Self.broadcastPath, Self.broadcast(channel), body: Self.payload)
        #expect(sent.status == 200)
        let received = try #require(emulator.receivedBroadcasts().first)
        #expect(received.channelID == channel)
        #expect(received.bundleID == Self.bundle)
        #expect(received.payload == Self.payload)
        #expect(received.authenticatedAs == Self.bundle)
        #expect(received.jsonLine.contains("\"channel_id\":\"\(channel)\""))

        #expect(try Self.exchange(client, "DELETE", Self.channelsPath, [("apns-channel-id", channel)]).status == 204)
        let gone = try Self.exchange(client, "DELETE", Self.channelsPath, [("apns-channel-id", channel)])
        #expect((gone.status, gone.reason) == (400, "ChannelNotRegistered"))
        emulator.reset()
        #expect(emulator.channelIDs(bundleID: Self.bundle).isEmpty)
    }

    static let unknown = "dGVzdC1jaGFubmVsLWlkMTI="

    /// (method, path, headers, body, status, reason): the emulator's refusals.
    static let refusals: [(String, String, [(name: String, value: String)], [UInt8], Int, String)] = [
        ("POST", broadcastPath, broadcast(unknown), payload, 400, "ChannelNotRegistered"),
        ("POST", broadcastPath, [("apns-push-type", "liveactivity")], payload, 400, "MissingChannelId"),
        ("POST", broadcastPath, broadcast("??"), payload, 400, "BadChannelId"),
        ("POST", broadcastPath, [("apns-channel-id", unknown)], payload, 400, "MissingPushType"),
        ("POST", broadcastPath, [("apns-channel-id", unknown), ("apns-push-type", "alert")], payload, 400,
         "InvalidPushType"),
        ("POST", broadcastPath, [("apns-channel-id", unknown), ("apns-push-type", "liveactivity"), ("apns-priority", "3")],
         payload, 400, "BadPriority"),
        ("POST", broadcastPath, broadcast(unknown), [], 400, "PayloadEmpty"),
        ("GET", broadcastPath, broadcast(unknown), [], 405, "MethodNotAllowed"),
        ("POST", channelsPath, [], Array("{}".utf8), 400, "MissingPushType"),
        ("POST", channelsPath, [], Array("nope".utf8), 400, "BadRequestPayload"),
        ("GET", channelsPath, [], [], 400, "MissingChannelId"),
        ("GET", channelsPath, [("apns-channel-id", unknown)], [], 400, "ChannelNotRegistered"),
        ("PUT", channelsPath, [], [], 405, "MethodNotAllowed"),
        ("GET", "/1/apps/com.example.other/all-channels", [], [], 403, "TopicMismatch"),
        ("GET", "/1/apps/\(bundle).push-type.liveactivity/all-channels", [], [], 403, "TopicMismatch"),
    ]

    @Test("Apple's reasons, over a client certificate for the bundle id", arguments: refusals)
    func refusal(_ row: (String, String, [(name: String, value: String)], [UInt8], Int, String)) throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let answer = try Self.exchange(client, row.0, row.1, row.2 + [("apns-request-id", Self.requestID)], body: row.3)
        #expect((answer.status, answer.reason) == (row.4, row.5))
        #expect(answer.header("apns-request-id") == Self.requestID)
        #expect(emulator.receivedBroadcasts().isEmpty)
    }

    @Test("a No Messages Stored channel takes only apns-expiration 0")
    func noMessagesStored() throws {
        let emulator = try Fixture.emulator()
        defer { emulator.stop() }
        let client = try TestClient(port: emulator.port)
        let channel = try #require(try Self.create(client, policy: 0).header("apns-channel-id"))
        let late = try Self.exchange(client, "POST", Self.broadcastPath,
                                     Self.broadcast(channel) + [("apns-expiration", "1900000000")], body: Self.payload)
        #expect((late.status, late.reason) == (400, "BadExpirationDate"))
        let now = try Self.exchange(client, "POST", Self.broadcastPath,
                                    Self.broadcast(channel) + [("apns-expiration", "0")], body: Self.payload)
        #expect(now.status == 200)
    }

    @Test("token authentication: no token 403 MissingProviderToken, a bad one InvalidProviderToken, a good one served")
    func tokens() throws {
        let emulator = try Fixture.emulator(.token)
        defer { emulator.stop() }
        let path = "/1/apps/\(Self.bundle)/all-channels"
        let client = try TestClient(port: emulator.port, certificate: nil, key: nil)
        let missing = try Self.exchange(client, "GET", path)
        #expect((missing.status, missing.reason) == (403, "MissingProviderToken"))
        let bad = try Self.exchange(client, "GET", path,
                                    [("authorization", "bearer " + Fixture.providerToken(corruptSignature: true))])
        #expect((bad.status, bad.reason) == (403, "InvalidProviderToken"))
        let good = try Self.exchange(client, "GET", path, [("authorization", "bearer " + Fixture.providerToken())])
        #expect(good.status == 200)
    }

    @Test("an app keeps at most 10,000 channels: the next is CannotCreateChannelConfig")
    func channelLimit() {
        let channels = BroadcastChannels()
        let settings = APNsChannelSettings(messageStoragePolicy: 1)
        for index in 0..<APNsChannelID.maximumChannelsPerApp {
            #expect(channels.create(bundleID: "a", settings: settings, id: String(index)) != nil)
        }
        #expect(channels.create(bundleID: "a", settings: settings, id: "one more") == nil)
        #expect(channels.create(bundleID: "b", settings: settings, id: "x") == "x")
    }
}
