import Delivery
import FCMCore
import RelayCore
import Testing
import TestSupport

@testable import AsyncPush

/// An Android token's queued notification as stream fields: the FCM form
/// comes back the same, an older reader's view of it fails whole, and a
/// hostile entry is refused by field.
@Suite("A queued FCM notification's stream fields")
struct AsyncFCMNotificationTests {
    typealias Fields = [(name: [UInt8], value: [UInt8])]

    static let token = "cXyz_-1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
    static let body = #"{"message":{"notification":{"body":"hé"},"data":{"n":"3"},"token":"\#(token)"}}"#

    static let sample = AsyncNotification(
        appID: "droid", token: token,
        message: .fcm(.init(token: FCMToken(token)!, body: Array(body.utf8))),
        source: .init(id: "n-2", platform: 2, message: "You have a new message"),
        acceptedAt: 1_800_000_000_123, tries: 1)

    static func field(_ name: String, _ value: String) -> (name: [UInt8], value: [UInt8]) {
        AsyncNotificationTests.field(name, value)
    }

    /// `sample`'s fields with `name` replaced by `value` (nil: removed).
    static func sampleFields(_ name: String, _ value: [UInt8]?) -> Fields {
        AsyncNotificationTests.replacing(name, by: value, in: sample.fields)
    }

    @Test("what the accept path writes for an Android token decodes to the same notification, with no APNs field")
    func roundTrip() throws {
        #expect(try AsyncNotification(fields: Self.sample.fields) == Self.sample)
        let names = Self.sample.fields.map { String(decoding: $0.name, as: UTF8.self) }
        #expect(names == ["v", "app", "svc", "tok", "pl", "at", "try", "nid", "plat", "msg"])
        #expect(Self.sample.expiration == nil)
        #expect(Self.sample.request(for: RelayApp(id: "droid", topic: "x")) == nil, "no APNs request for an FCM token")
    }

    @Test("the request for an app carries the app's service account; none for an app without FCM credentials")
    func requestForApp() throws {
        var droid = RelayApp(id: "droid", topic: "", production: nil, development: nil)
        #expect(Self.sample.refusal(by: droid) == "app droid has no FCM credentials")
        droid.fcm = FCMAppCredentials(account: FCMTestAccount.make(project: "droid"), health: AppHealth())
        #expect(Self.sample.refusal(by: droid) == nil)
        guard case .fcm(let message) = Self.sample.message else { Issue.record("not FCM's form"); return }
        let request = try #require(message.request(for: droid))
        #expect(request.account.projectID == "droid")
        #expect(request.token.text == Self.token)
        #expect(request.body == Array(Self.body.utf8))
    }

    static let hostile: [(String, Fields, String)] = [
        ("an unknown service", sampleFields("svc", Array("hms".utf8)), "svc"),
        ("an empty service", sampleFields("svc", []), "svc"),
        ("no token", sampleFields("tok", nil), "tok"),
        ("a token with a space", sampleFields("tok", Array("a b".utf8)), "tok"),
        ("a token with a quote", sampleFields("tok", Array("a\"b".utf8)), "tok"),
        ("a token of 4,097 bytes", sampleFields("tok", Array(repeating: UInt8(ascii: "a"), count: 4_097)), "tok"),
        ("no body", sampleFields("pl", nil), "pl"),
        ("a body that is not JSON", sampleFields("pl", Array("{\"message\":".utf8)), "pl"),
        ("a body without a message", sampleFields("pl", Array(#"{"token":"\#(token)"}"#.utf8)), "pl"),
        ("a message that is a string", sampleFields("pl", Array(#"{"message":"\#(token)"}"#.utf8)), "pl"),
        ("a message to another token", sampleFields("pl", Array(#"{"message":{"token":"other"}}"#.utf8)), "pl"),
        ("a message to a topic", sampleFields("pl", Array(#"{"message":{"topic":"news"}}"#.utf8)), "pl"),
        ("a body of 65,537 bytes", sampleFields("pl", Array(repeating: 0x20, count: 65_537)), "pl"),
        ("a body not UTF-8", sampleFields("pl", [0xFF, 0xFE]), "pl"),
        ("a repeated service", sample.fields + [field("svc", "fcm")], "svc"),
        ("a platform that is no number", sampleFields("plat", Array("android".utf8)), "plat"),
    ]

    @Test("a hostile FCM entry is refused naming the field, never its value", arguments: hostile)
    func hostileEntry(_ label: String, _ fields: Fields, _ field: String) {
        AsyncNotificationTests.expectRefusal(label, fields, naming: field, never: [Self.token, "hé"])
    }

    @Test("an FCM entry read as an APNs one (no svc: what an older instance sees) is refused whole, never sent to APNs")
    func olderReaderRefusesIt() {
        #expect(throws: AsyncNotification.DecodingError(field: "env", problem: "missing")) {
            try AsyncNotification(fields: Self.sampleFields("svc", nil))
        }
    }
}
