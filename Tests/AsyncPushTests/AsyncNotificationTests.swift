import APNsCore
import HTTPCore
import RelayCore
import Testing

@testable import AsyncPush

/// A fleet's queued asynchronous notification as stream fields: what the
/// accept path writes comes back the same, and whatever else an entry
/// holds (another writer's, an attacker's) is refused by field, never
/// read half.
@Suite("A queued asynchronous notification's stream fields")
struct AsyncNotificationTests {
    typealias Fields = [(name: [UInt8], value: [UInt8])]

    static let token = String(repeating: "ab", count: 32)

    static let sample = AsyncNotification(
        appID: "mastodon", environment: .development, token: " " + token, deviceToken: token,
        headers: [HTTPField(name: "apns-push-type", value: "alert"), HTTPField(name: "apns-topic", value: "x.y"),
                  HTTPField(name: "apns-priority", value: "10"), HTTPField(name: "apns-expiration", value: "1900000000")],
        payload: Array(#"{"aps":{"alert":"hé"}}"#.utf8), apnsID: "6F1C0E35-4C2B-4D42-9A4B-1D4A5E6F7A8B",
        source: .init(id: "n-1", platform: 1, message: "line one\nline two"),
        acceptedAt: 1_800_000_000_123, tries: 2)

    static func field(_ name: String, _ value: String) -> (name: [UInt8], value: [UInt8]) {
        (Array(name.utf8), Array(value.utf8))
    }

    /// `sample`'s fields with `name` replaced by `value` (nil: removed).
    static func sampleFields(_ name: String, _ value: [UInt8]?) -> Fields {
        replacing(name, by: value, in: sample.fields)
    }

    /// `fields` with `name` replaced by `value` (nil: removed).
    static func replacing(_ name: String, by value: [UInt8]?, in fields: Fields) -> Fields {
        var fields = fields.filter { $0.name != Array(name.utf8) }
        if let value { fields.append((Array(name.utf8), value)) }
        return fields
    }

    @Test("what the accept path writes decodes to the same notification, topic left to the app")
    func roundTrip() throws {
        let decoded = try AsyncNotification(fields: Self.sample.fields)
        #expect(decoded == Self.sample)
        guard case .apns(let message) = decoded.message else { Issue.record("not APNs' form"); return }
        #expect(!message.headers.contains { $0.name == "apns-topic" })
        #expect(message.headers.map(\.name) == ["apns-push-type", "apns-priority", "apns-expiration"])
    }

    @Test("a notification without a gorush source and without headers round-trips")
    func bareRoundTrip() throws {
        var bare = Self.sample
        bare.source = nil
        bare.message = .apns(.init(environment: .development, deviceToken: Self.token, headers: [], payload: [],
                                   apnsID: ""))
        #expect(try AsyncNotification(fields: bare.fields) == bare)
    }

    @Test("the notification for an app carries the app's topic and credential; none without one for the environment")
    func notificationForApp() throws {
        let app = RelayApp(id: "mastodon", topic: "org.example.app", production: CredentialID(1),
                           development: CredentialID(2))
        let request = try #require(Self.sample.request(for: app))
        #expect(request.credential == CredentialID(2))
        #expect(request.path == "/3/device/" + Self.token)
        #expect(request.headers.first { $0.name == "apns-topic" }?.value == "org.example.app")
        #expect(Self.sample.expiration == 1_900_000_000)
        #expect(Self.sample.tries == 2)
        #expect(Self.sample.token == " " + Self.token)
        let source = Self.sample.failedPushSource
        #expect(source.notification?.id == "n-1" && source.notification?.message == "line one\nline two")
        let productionOnly = RelayApp(id: "mastodon", topic: "org.example.app", production: CredentialID(1),
                                      development: nil)
        #expect(Self.sample.request(for: productionOnly) == nil)
    }

    @Test("the notification for an app carries the topic its push type needs", arguments: [
        ("liveactivity", "org.example.app.push-type.liveactivity"), ("voip", "org.example.app.voip"),
        ("background", "org.example.app"),
    ])
    func notificationForAppCarriesPushTypesTopic(_ pushType: String, _ topic: String) throws {
        let app = RelayApp(id: "mastodon", topic: "org.example.app", production: nil, development: CredentialID(2))
        var live = Self.sample
        live.message = .apns(.init(environment: .development, deviceToken: Self.token,
                                   headers: [HTTPField(name: "apns-push-type", value: pushType)], payload: [],
                                   apnsID: ""))
        let request = try #require(live.request(for: app))
        #expect(request.headers.first { $0.name == "apns-topic" }?.value == topic)
    }

    static let hostile: [(String, Fields, String)] = [
        ("another version", sampleFields("v", Array("2".utf8)), "v"),
        ("no version", sampleFields("v", nil), "v"),
        ("no app", sampleFields("app", nil), "app"),
        ("an empty app", sampleFields("app", []), "app"),
        ("an app with a newline", sampleFields("app", Array("a\nb".utf8)), "app"),
        ("an app of 300 bytes", sampleFields("app", Array(repeating: UInt8(ascii: "a"), count: 300)), "app"),
        ("an unknown environment", sampleFields("env", Array("staging".utf8)), "env"),
        ("a device token with a slash", sampleFields("dev", Array("ab/../cd".utf8)), "dev"),
        ("a device token of 201 digits", sampleFields("dev", Array(repeating: UInt8(ascii: "a"), count: 201)), "dev"),
        ("an empty device token", sampleFields("dev", []), "dev"),
        ("a token not UTF-8", sampleFields("tok", [0xFF, 0xFE]), "tok"),
        ("a payload of 5,121 bytes", sampleFields("pl", Array(repeating: 0x20, count: 5_121)), "pl"),
        ("no payload", sampleFields("pl", nil), "pl"),
        ("a header line without a colon", sampleFields("hdr", Array("apns-priority".utf8)), "hdr"),
        ("an upper-case header name", sampleFields("hdr", Array("Apns-Priority:10".utf8)), "hdr"),
        ("a pseudo-header", sampleFields("hdr", Array(":path:/3/device/x".utf8)), "hdr"),
        ("an apns-topic header", sampleFields("hdr", Array("apns-topic:evil".utf8)), "hdr"),
        ("a header value with a carriage return", sampleFields("hdr", Array("apns-priority:10\r".utf8)), "hdr"),
        ("seventeen headers", sampleFields("hdr", Array((0..<17).map { "x-\($0):1" }.joined(separator: "\n").utf8)),
         "hdr"),
        ("an apns-id with a control character", sampleFields("id", Array("a\u{1}b".utf8)), "id"),
        ("a time that is no number", sampleFields("at", Array("soon".utf8)), "at"),
        ("a negative time", sampleFields("at", Array("-1".utf8)), "at"),
        ("tries past 1,000", sampleFields("try", Array("1001".utf8)), "try"),
        ("tries of 30 digits", sampleFields("try", Array(String(repeating: "9", count: 30).utf8)), "try"),
        ("a platform that is no number", sampleFields("plat", Array("ios".utf8)), "plat"),
        ("a source without its message", sampleFields("msg", nil), "msg"),
        ("a repeated field", sample.fields + [field("app", "other")], "app"),
        // A name is the writer's bytes: a newline in it must not reach a log line.
        ("a repeated field named by a newline", sample.fields + [field("\n", "1"), field("\n", "2")], "(1 bytes)"),
    ]

    @Test("a hostile entry is refused naming the field, never its value", arguments: hostile)
    func hostileEntry(_ label: String, _ fields: Fields, _ field: String) {
        Self.expectRefusal(label, fields, naming: field, never: [Self.token, "aps"])
    }

    /// `fields` are refused naming `field`, the refusal's words showing
    /// none of `values`.
    static func expectRefusal(_ label: String, _ fields: Fields, naming field: String, never values: [String]) {
        do {
            _ = try AsyncNotification(fields: fields)
            Issue.record("\(label): decoded")
        } catch {
            #expect(error.field == field, "\(label): \(error)")
            #expect(!values.contains { error.description.contains($0) }, "\(label)")
        }
    }

    @Test("an unknown field (a newer writer's) is ignored")
    func unknownField() throws {
        #expect(try AsyncNotification(fields: Self.sample.fields + [Self.field("future", "1")]) == Self.sample)
    }
}
