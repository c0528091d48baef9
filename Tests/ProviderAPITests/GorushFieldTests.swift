// Each gorush field alone, and the combinations where gorush's order of
// building matters: the payload and headers gorush (notify/notification_apns.go)
// and apns2 (payload/builder.go, client.go setHeaders) would send.

import APNsCore
import JSON
@testable import ProviderAPI
import RelayCore
import Testing

struct FieldCase: Sendable, CustomTestStringConvertible {
    var fields: String
    var payload: String
    var testDescription: String { fields }
}

let payloadCases: [FieldCase] = [
    FieldCase(fields: "", payload: #"{"aps":{}}"#),
    FieldCase(fields: #""message":"hi""#, payload: #"{"aps":{"alert":"hi"}}"#),
    FieldCase(fields: #""title":"T""#, payload: #"{"aps":{"alert":{"title":"T"}}}"#),
    FieldCase(fields: #""title":"T","message":"hi""#, payload: #"{"aps":{"alert":{"title":"T","body":"hi"}}}"#),
    // A dictionary field replaces the message string (apns2's alert()).
    FieldCase(fields: #""message":"hi","alert":{"subtitle":"S"}"#, payload: #"{"aps":{"alert":{"subtitle":"S"}}}"#),
    FieldCase(fields: #""title":"T","alert":{"title":"A"}"#, payload: #"{"aps":{"alert":{"title":"A"}}}"#),
    FieldCase(fields: #""alert":{"title":"","body":""}"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""alert":{"loc-key":"K","loc-args":["a","b"],"title-loc-key":"TK","title-loc-args":["c"]}"#,
              payload: #"{"aps":{"alert":{"loc-key":"K","loc-args":["a","b"],"title-loc-key":"TK","title-loc-args":["c"]}}}"#),
    FieldCase(fields: #""alert":{"launch-image":"L.png","action":"Go","summary-arg":"Bob","summary-arg-count":3}"#,
              payload: #"{"aps":{"alert":{"launch-image":"L.png","action":"Go","summary-arg":"Bob","summary-arg-count":3}}}"#),
    FieldCase(fields: #""alert":{"summary-arg-count":0,"unknown":"x"}"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""badge":0"#, payload: #"{"aps":{"badge":0}}"#),
    FieldCase(fields: #""badge":12"#, payload: #"{"aps":{"badge":12}}"#),
    FieldCase(fields: #""badge":-1"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""badge":null"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""category":"C""#, payload: #"{"aps":{"category":"C"}}"#),
    FieldCase(fields: #""thread-id":"th""#, payload: #"{"aps":{"thread-id":"th"}}"#),
    FieldCase(fields: #""url-args":["x","y"]"#, payload: #"{"aps":{"url-args":["x","y"]}}"#),
    FieldCase(fields: #""content_available":true"#, payload: #"{"aps":{"content-available":1}}"#),
    FieldCase(fields: #""content_available":false"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""mutable_content":true"#, payload: #"{"aps":{"mutable-content":1}}"#),
    FieldCase(fields: #""interruption_level":"time-sensitive""#, payload: #"{"aps":{"interruption-level":"time-sensitive"}}"#),
    FieldCase(fields: #""relevance-score":0.5"#, payload: #"{"aps":{"relevance-score":0.5}}"#),
    FieldCase(fields: #""relevance-score":0"#, payload: #"{"aps":{"relevance-score":0}}"#),
    // Sound: a string (even empty), gorush's dictionary, apns2's critical sound.
    FieldCase(fields: #""sound":"ping.aiff""#, payload: #"{"aps":{"sound":"ping.aiff"}}"#),
    FieldCase(fields: #""sound":"""#, payload: #"{"aps":{"sound":""}}"#),
    FieldCase(fields: #""sound":{"critical":1,"name":"default","volume":2.0}"#,
              payload: #"{"aps":{"sound":{"critical":1,"name":"default","volume":2}}}"#),
    FieldCase(fields: #""sound":{"name":"a.caf"}"#, payload: #"{"aps":{"sound":{"name":"a.caf"}}}"#),
    FieldCase(fields: #""sound":{}"#, payload: #"{"aps":{"sound":{}}}"#),
    FieldCase(fields: #""sound":{"volume":0.8}"#, payload: #"{"aps":{"sound":{"volume":0.8}}}"#),
    FieldCase(fields: #""name":"n.caf""#, payload: #"{"aps":{"sound":{"critical":1,"name":"n.caf","volume":1}}}"#),
    FieldCase(fields: #""volume":0.3"#, payload: #"{"aps":{"sound":{"critical":1,"name":"default","volume":0.3}}}"#),
    FieldCase(fields: #""sound":"s","name":"n","volume":0.5"#,
              payload: #"{"aps":{"sound":{"critical":1,"name":"n","volume":0.5}}}"#),
    // Live Activity fields.
    FieldCase(fields: #""event":"update","timestamp":1700000000,"stale-date":1700003600,"dismissal-date":1700007200"#,
              payload: #"{"aps":{"event":"update","timestamp":1700000000,"stale-date":1700003600,"dismissal-date":1700007200}}"#),
    FieldCase(fields: #""content-state":{"a":1,"b":[true,null]}"#, payload: #"{"aps":{"content-state":{"a":1,"b":[true,null]}}}"#),
    FieldCase(fields: #""attributes-type":"T","attributes":{"k":"v"}"#, payload: #"{"aps":{"attributes-type":"T","attributes":{"k":"v"}}}"#),
    FieldCase(fields: #""timestamp":0,"stale-date":-5,"content-state":{}"#, payload: #"{"aps":{}}"#),
    // Custom data at the top level; a data.aps replaces gorush's aps.
    FieldCase(fields: #""data":{"k":"v","n":{"deep":[1,2]}}"#, payload: #"{"aps":{},"k":"v","n":{"deep":[1,2]}}"#),
    FieldCase(fields: #""message":"m","badge":3,"data":{"aps":{"alert":"mine"}}"#, payload: #"{"aps":{"alert":"mine"}}"#),
    // Fields of other platforms and fields gorush does not know are ignored.
    FieldCase(fields: #""image":"x","notification":{"title":"t"},"android":{},"unknown":[1]"#, payload: #"{"aps":{}}"#),
]

@Test("each field alone gives gorush's payload", arguments: payloadCases)
func fieldGivesGorushsPayload(_ field: FieldCase) throws {
    let notification = try decodeOne(field.fields)
    let mapping = mapGorushNotification(notification)
    let push = try #require(mapping.push)
    #expect(mapping.failures.isEmpty)
    #expect(try sameJSON(push.payload, field.payload), "\(text(push.payload))")
}

struct HeaderCase: Sendable, CustomTestStringConvertible {
    var fields: String
    var headers: [String]
    var testDescription: String { fields }
}

let headerCases: [HeaderCase] = [
    HeaderCase(fields: "", headers: ["apns-push-type: alert"]),
    HeaderCase(fields: #""priority":"high""#, headers: ["apns-priority: 10", "apns-push-type: alert"]),
    HeaderCase(fields: #""priority":"normal""#, headers: ["apns-priority: 5", "apns-push-type: alert"]),
    HeaderCase(fields: #""priority":"urgent""#, headers: ["apns-push-type: alert"]),
    HeaderCase(fields: #""expiration":1700000000"#, headers: ["apns-expiration: 1700000000", "apns-push-type: alert"]),
    HeaderCase(fields: #""expiration":0"#, headers: ["apns-push-type: alert"]),
    HeaderCase(fields: #""expiration":-3"#, headers: ["apns-push-type: alert"]),
    HeaderCase(fields: #""apns_id":"3F2504E0-4F89-41D3-9A0C-0305E82C3301""#,
               headers: ["apns-id: 3F2504E0-4F89-41D3-9A0C-0305E82C3301", "apns-push-type: alert"]),
    HeaderCase(fields: #""collapse_id":"game-1""#, headers: ["apns-collapse-id: game-1", "apns-push-type: alert"]),
    HeaderCase(fields: #""push_type":"background""#, headers: ["apns-push-type: background"]),
    HeaderCase(fields: #""topic":"com.example.app""#, headers: ["apns-push-type: alert"]),
    HeaderCase(fields: #""apns_id":"id","collapse_id":"c","priority":"high","expiration":9,"push_type":"voip""#,
               headers: ["apns-id: id", "apns-collapse-id: c", "apns-priority: 10", "apns-expiration: 9",
                         "apns-push-type: voip"]),
]

@Test("headers are sent only when gorush would send them, never apns-topic", arguments: headerCases)
func headersOnlyWhenGiven(_ field: HeaderCase) throws {
    let push = try #require(mapGorushNotification(try decodeOne(field.fields)).push)
    #expect(lines(push.headers) == field.headers)
}

@Test("production, development and neither choose the environment",
      arguments: [(#""production":true"#, APNsEnvironment.production),
                  (#""development":true"#, .development),
                  (#""production":true,"development":true"#, .production),
                  ("", .production)])
func environmentFromFlags(_ fields: String, _ environment: APNsEnvironment) throws {
    #expect(mapGorushNotification(try decodeOne(fields)).push?.environment == environment)
}

@Test("topic and app pass through to the push, and are nil when not given")
func topicAndAppPassThrough() throws {
    let given = try #require(mapGorushNotification(try decodeOne(#""topic":"com.example.a","app":"toot""#)).push)
    #expect(given.topic == "com.example.a" && given.app == "toot")
    let absent = try #require(mapGorushNotification(try decodeOne("")).push)
    #expect(absent.topic == nil && absent.app == nil)
}

@Test("custom data round-trips exactly: ints, floats, booleans, big numbers and every escape")
func customDataRoundTripsExactly() throws {
    let data = #"{"i":1,"f":1.5,"t":true,"z":false,"n":null,"big":12345678901234567890123,"e":-1.0E+2,"#
        + #""s":"q\"b\\s/\b\f\n\r\t\u0001\u001f é ☃ 😀 \u2028","a":[0,-0,[]],"o":{}}"#
    let notification = try decodeOne(#""data":"# + data)
    let push = try #require(mapGorushNotification(notification).push)
    let payload = text(push.payload)
    // The data members follow aps, written back as they came but for the
    // escapes RelayCore writes its own way (\/ → /, \u2028 as UTF-8).
    #expect(payload.hasPrefix(#"{"aps":{},"i":1,"f":1.5,"t":true,"z":false,"n":null,"big":12345678901234567890123,"e":-1.0E+2,"#))
    #expect(try parseStrictJSON(push.payload)["s"] == .string("q\"b\\s/\u{8}\u{c}\n\r\t\u{1}\u{1f} é ☃ 😀 \u{2028}"))
    #expect(try parseStrictJSON(push.payload)["a"] == .array([.number("0"), .number("-0"), .array([])]))
    #expect(try sameJSON(push.payload, "{\"aps\":{}," + data.dropFirst()))
}

@Test("a data.aps with fields that fill aps too fails every token, as gorush would panic")
func dataAPSWithOtherFieldsFails() throws {
    let mapping = mapGorushNotification(try decodeOne(#""title":"T","data":{"aps":{}}"#))
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.token) == [tokenA])
    #expect(mapping.failures.first?.error.contains("aps") == true)
}

@Test("a payload over 4096 bytes fails every token with PayloadTooLarge, and 4096 exactly is sent")
func payloadOverLimitFails() throws {
    // {"aps":{"alert":"…"}} is 20 bytes around the message.
    let fits = try decodeOne(#""message":""# + String(repeating: "x", count: 4096 - 20) + "\"")
    #expect(mapGorushNotification(fits).push?.payload.count == 4096)
    var over = try decodeOne(#""message":""# + String(repeating: "x", count: 4096 - 19) + "\"")
    over.tokens = [tokenA, tokenB]
    let mapping = mapGorushNotification(over)
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.token) == [tokenA, tokenB])
    #expect(mapping.failures.allSatisfy { $0.error == "PayloadTooLarge" && $0.reason == "PayloadTooLarge" })
}

@Test("tokens that are not hex fail alone; the others are sent", arguments: [
    "", "xyz", String(repeating: "a", count: 62), String(repeating: "a", count: 65), String(repeating: "g", count: 64),
    String(repeating: "a", count: 202), String(repeating: "é", count: 32),
])
func badTokenFailsAlone(_ bad: String) throws {
    var notification = try decodeOne(#""message":"m","notif_id":"n1""#)
    notification.tokens = [tokenA, bad, tokenB]
    let mapping = mapGorushNotification(notification)
    #expect(mapping.push?.tokens == [tokenA, tokenB])
    #expect(mapping.failures == [FailedPushLog(notificationID: "n1", token: bad, message: "m", error: "BadDeviceToken",
                                               reason: "BadDeviceToken")])
}

@Test("no tokens gives one entry with gorush's message and an empty token")
func noTokensFails() throws {
    var notification = try decodeOne("")
    notification.tokens = []
    let mapping = mapGorushNotification(notification)
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.token) == [""])
    #expect(mapping.failures.first?.error == "please provide at least one device token")
}

@Test("a header field with a control character fails the notification", arguments: ["apns_id", "collapse_id", "push_type"])
func controlCharacterInHeaderFails(_ name: String) throws {
    let mapping = mapGorushNotification(try decodeOne("\"\(name)\":\"a\\r\\nb\""))
    #expect(mapping.push == nil)
    #expect(mapping.failures.first?.error.hasPrefix(name) == true)
}

@Test("counts are the tokens of platform 1 plus one per topic, as gorush counts")
func countsAsGorush() throws {
    let body = """
        {"notifications":[{"platform":1,"tokens":["a","b"],"topic":"t"},{"platform":1,"tokens":["c"]},
        {"platform":2,"tokens":["d"],"topic":"x"}]}
        """
    #expect(gorushCount(of: try decodeGorushRequest(Array(body.utf8), limits: roomyLimits)) == 4)
}
