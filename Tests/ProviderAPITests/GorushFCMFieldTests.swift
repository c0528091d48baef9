// Each platform 2 field alone, and the combinations where gorush's order
// of building matters: the FCM HTTP v1 body gorush v1.22.0
// (notify/notification_fcm.go) and firebase-admin-go (messaging.go's
// MarshalJSON) would send, byte for byte but for the escaping of `<>&`.

import FCMCore
import JSON
@testable import ProviderAPI
import RelayCore
import Testing

/// A registration token of FCM's shape.
let fcmTokenA = "cXyz-1_2:APA91bH" + String(repeating: "k", count: 140)

/// Decodes a request whose only notification is platform 2 with `fields`
/// (JSON members, without braces; `tokens` defaults to `[fcmTokenA]`).
func decodeAndroid(_ fields: String) throws -> ProviderNotification {
    let tokens = fields.contains(#""tokens":"#) ? "" : #""tokens":[""# + fcmTokenA + #""],"#
    let body = #"{"notifications":[{"platform":2,"# + tokens + fields + "}]}"
    return try #require(try decodeGorushRequest(Array(body.utf8), limits: roomyLimits).first)
}

/// The message's members before `token` (without braces).
let fcmFieldCases: [FieldsCase] = [
    FieldsCase(fields: #""message":null"#, expected: ""),
    // setupFCMNotification: title, message and image make the notification.
    FieldsCase(fields: #""message":"hi""#, expected: #""notification":{"body":"hi"}"#),
    FieldsCase(fields: #""title":"T""#, expected: #""notification":{"title":"T"}"#),
    FieldsCase(fields: #""image":"https://e.x/i.png""#, expected: #""notification":{"image":"https://e.x/i.png"}"#),
    FieldsCase(fields: #""title":"T","message":"hi","image":"/i.png""#,
                 expected: #""notification":{"title":"T","body":"hi","image":"/i.png"}"#),
    FieldsCase(fields: #""notification":{"title":"N","body":"B","image":"https://e.x/n.png","unknown":1}"#,
                 expected: #""notification":{"title":"N","body":"B","image":"https://e.x/n.png"}"#),
    FieldsCase(fields: #""title":"T","notification":{"title":"N","body":"B"}"#, expected: #""notification":{"title":"T","body":"B"}"#),
    FieldsCase(fields: #""notification":{}"#, expected: #""notification":{}"#),
    FieldsCase(fields: #""notification":null"#, expected: ""),
    // gorush v1.17's Android members of `notification` go to android.notification.
    FieldsCase(fields: ##""title":"T","notification":{"icon":"myicon","color":"#112244","android_channel_id":"ch"}"##,
                 expected: ##""notification":{"title":"T"},"android":{"notification":{"icon":"myicon","color":"#112244","channel_id":"ch"}}"##),
    FieldsCase(fields: #""notification":{"tag":"t"},"android":{"notification":{"tag":"own"}}"#,
                 expected: #""notification":{},"android":{"notification":{"tag":"own"}}"#),
    // setupFCMPriority, and the AndroidConfig's own priority first.
    FieldsCase(fields: #""priority":"high""#, expected: #""android":{"priority":"high"}"#),
    FieldsCase(fields: #""priority":"normal""#, expected: #""android":{"priority":"normal"}"#),
    FieldsCase(fields: #""priority":"normal","android":{"priority":"high"}"#, expected: #""android":{"priority":"high"}"#),
    FieldsCase(fields: #""priority":"normal","android":{"collapse_key":"c"}"#,
                 expected: #""android":{"collapse_key":"c","priority":"normal"}"#),
    // AndroidConfig's members, in firebase-admin-go's order (ttl first).
    FieldsCase(fields: #""android":{"direct_boot_ok":true,"restricted_package_name":"p","ttl":"3600s","collapse_key":"c","priority":"high"}"#,
                 expected: #""android":{"ttl":"3600s","collapse_key":"c","priority":"high","restricted_package_name":"p","direct_boot_ok":true}"#),
    FieldsCase(fields: #""android":{"bandwidth_constrained_ok":true,"restricted_satellite_ok":true,"fcm_options":{}}"#,
                 expected: #""android":{"fcm_options":{},"bandwidth_constrained_ok":true,"restricted_satellite_ok":true}"#),
    FieldsCase(fields: #""fcm_options":{"analytics_label":"l","other":1},"android":{"fcm_options":{"analytics_label":"a"}}"#,
                 expected: #""android":{"fcm_options":{"analytics_label":"a"}},"fcm_options":{"analytics_label":"l"}"#),
    FieldsCase(fields: #""fcm_options":null"#, expected: ""),
    FieldsCase(fields: #""android":{}"#, expected: #""android":{}"#),
    FieldsCase(fields: #""android":null"#, expected: ""),
    FieldsCase(fields: #""android":{"ttl":"0s"}"#, expected: #""android":{"ttl":"0s"}"#),
    FieldsCase(fields: #""android":{"ttl":"86400"}"#, expected: #""android":{"ttl":"86400s"}"#),
    // stringToDuration reads the part after the point as nanoseconds.
    FieldsCase(fields: #""android":{"ttl":"1.5s"}"#, expected: #""android":{"ttl":"1.000000005s"}"#),
    FieldsCase(fields: #""android":{"ttl":"2.000000250s"}"#, expected: #""android":{"ttl":"2.000000250s"}"#),
    FieldsCase(fields: #""android":{"data":{"b":"2","a":"1"}}"#, expected: #""android":{"data":{"a":"1","b":"2"}}"#),
    FieldsCase(fields: ##""android":{"notification":{"sticky":true,"channel_id":"ch","title_loc_args":["a"],"title_loc_key":"k","notification_count":0,"visibility":"PUBLIC","notification_priority":"PRIORITY_HIGH","click_action":"OPEN","tag":"t","color":"#ff0000","icon":"i","body":"b","title":"t2","light_settings":{},"default_sound":false}}"##,
                 expected: ##""android":{"notification":{"notification_priority":"PRIORITY_HIGH","visibility":"PUBLIC","title":"t2","body":"b","icon":"i","color":"#ff0000","tag":"t","click_action":"OPEN","title_loc_key":"k","title_loc_args":["a"],"channel_id":"ch","sticky":true,"notification_count":0}}"##),
    // gorush v1.17's collapse_key and time_to_live, where android leaves them unset.
    FieldsCase(fields: #""collapse_key":"old","time_to_live":60"#, expected: #""android":{"ttl":"60s","collapse_key":"old"}"#),
    FieldsCase(fields: #""time_to_live":0"#, expected: #""android":{"ttl":"0s"}"#),
    FieldsCase(fields: #""collapse_key":"old","time_to_live":60,"android":{"collapse_key":"new","ttl":"5s"}"#,
                 expected: #""android":{"ttl":"5s","collapse_key":"new"}"#),
    // setupFCMSound: a string sound makes the AndroidConfig only when there is none.
    FieldsCase(fields: #""sound":"ping""#, expected: #""android":{"notification":{"sound":"ping"}}"#),
    FieldsCase(fields: #""sound":"ping","priority":"high""#, expected: #""android":{"priority":"high","notification":{"sound":"ping"}}"#),
    FieldsCase(fields: #""sound":"""#, expected: #""android":{"notification":{}}"#),
    FieldsCase(fields: #""sound":"ping","android":{}"#, expected: #""android":{}"#),
    FieldsCase(fields: #""sound":{"name":"critical.caf"}"#, expected: ""),
    // convertDataToStringMap: keys sorted, non-strings as Go's encoder writes them.
    FieldsCase(fields: #""data":{"s":"str","n":5,"f":1.50,"b":true,"z":null,"o":{"y":1,"x":[1,"a"]},"e":[]}"#,
                 expected: #""data":{"b":"true","e":"[]","f":"1.5","n":"5","o":"{\"x\":[1,\"a\"],\"y\":1}","s":"str","z":"null"}"#),
    FieldsCase(fields: #""data":{}"#, expected: ""),
    // Fields of other platforms do not reach the message.
    FieldsCase(fields: #""badge":3,"alert":{"title":"A"},"category":"C","content-state":{"a":1},"expiration":5,"apns_id":"x""#,
                 expected: ""),
]

@Test("each platform 2 field alone gives gorush's FCM message", arguments: fcmFieldCases)
func fcmFieldGivesGorushsMessage(_ field: FieldsCase) throws {
    let mapping = mapGorushFCMNotification(try decodeAndroid(field.fields))
    #expect(mapping.failures.isEmpty)
    let push = try #require(mapping.push)
    #expect(push.topicMessage == nil)
    let message = try #require(push.messages.first)
    #expect(push.messages.count == 1 && message.token.text == fcmTokenA)
    let separator = field.expected.isEmpty ? "" : ","
    #expect(text(message.body) == #"{"message":{"# + field.expected + separator + #""token":""# + fcmTokenA + #""}}"#)
}

struct GoNumberCase: Sendable, CustomTestStringConvertible {
    var json: String
    var go: String
    var testDescription: String { json }
}

/// Numbers as gorush's json.Marshal writes the float64 it decoded them to.
let goNumberCases: [GoNumberCase] = [
    GoNumberCase(json: "0", go: "0"), GoNumberCase(json: "-0", go: "-0"), GoNumberCase(json: "5", go: "5"),
    GoNumberCase(json: "-12", go: "-12"), GoNumberCase(json: "1.50", go: "1.5"), GoNumberCase(json: "1e3", go: "1000"),
    GoNumberCase(json: "0.1", go: "0.1"), GoNumberCase(json: "1e16", go: "10000000000000000"),
    GoNumberCase(json: "123456789012345678901234567890", go: "1.2345678901234568e+29"),
    GoNumberCase(json: "12345678901234567890", go: "12345678901234567000"),
    GoNumberCase(json: "1e20", go: "100000000000000000000"), GoNumberCase(json: "1e21", go: "1e+21"),
    GoNumberCase(json: "0.000001", go: "0.000001"), GoNumberCase(json: "0.0000001", go: "1e-7"),
    GoNumberCase(json: "1.5e-10", go: "1.5e-10"), GoNumberCase(json: "-2.5E+300", go: "-2.5e+300"),
    GoNumberCase(json: "5e-324", go: "5e-324"), GoNumberCase(json: "0.30000000000000004", go: "0.30000000000000004"),
]

@Test("data's numbers become the text Go writes for their float64", arguments: goNumberCases)
func dataNumbersAsGoWritesThem(_ number: GoNumberCase) {
    #expect(goJSONText(.number(number.json)) == number.go)
}

@Test("a topic is one message, not one per token; a condition too, named in the log as gorush does")
func topicAndConditionAreOneMessage() throws {
    struct TopicCase {
        var fields: String, target: String, body: String, tokens: Int
    }
    let cases = [
        TopicCase(fields: #""tokens":[],"topic":"news""#, target: "news", body: #"{"message":{"topic":"news"}}"#, tokens: 0),
        TopicCase(fields: #""tokens":null,"topic":"/topics/news","message":"m""#, target: "/topics/news",
                  body: #"{"message":{"topic":"news","notification":{"body":"m"}}}"#, tokens: 0),
        TopicCase(fields: #""condition":"'a' in topics && 'b' in topics""#, target: "'a' in topics && 'b' in topics",
                  body: #"{"message":{"condition":"'a' in topics && 'b' in topics"}}"#, tokens: 1),
        TopicCase(fields: #""tokens":[],"condition":"'a' in topics","priority":"high""#, target: "'a' in topics",
                  body: #"{"message":{"android":{"priority":"high"},"condition":"'a' in topics"}}"#, tokens: 0),
        TopicCase(fields: #""topic":"highScores","message":"m","data":{"k":1}"#, target: "highScores",
                  body: #"{"message":{"topic":"highScores","data":{"k":"1"},"notification":{"body":"m"}}}"#, tokens: 1),
    ]
    for c in cases {
        let mapping = mapGorushFCMNotification(try decodeAndroid(c.fields))
        #expect(mapping.failures.isEmpty, "\(c.fields)")
        let push = try #require(mapping.push)
        #expect(push.topicMessage?.target == c.target)
        #expect(push.topicMessage.map { text($0.body) } == c.body)
        #expect(push.messages.count == c.tokens)
        for message in push.messages {
            #expect(!text(message.body).contains(#""topic""#) && !text(message.body).contains(#""condition""#))
        }
    }
}

@Test("gorush's README Android examples give the messages gorush would send")
func readmeAndroidExamples() throws {
    let tokens = #""tokens":[""# + fcmTokenA + #"",""# + fcmTokenA + #"B"],"#
    let cases: [(String, String)] = [
        (tokens + #""message":"Hello World Android!","title":"You got message""#,
         #""notification":{"title":"You got message","body":"Hello World Android!"}"#),
        (tokens + #""message":"Hello World Android!","title":"You got message","fcm_options":{"analytics_label":"example"}"#,
         #""notification":{"title":"You got message","body":"Hello World Android!"},"fcm_options":{"analytics_label":"example"}"#),
        (tokens + ##""message":"Hello World Android!","title":"You got message","notification":{"icon":"myicon","color":"#112244"}"##,
         ##""notification":{"title":"You got message","body":"Hello World Android!"},"android":{"notification":{"icon":"myicon","color":"#112244"}}"##),
        (tokens + #""message":"Hello World Android!","title":"You got message","data":{"Nick":"Mario","body":"great match!","Room":"PortugalVSDenmark"}"#,
         #""data":{"Nick":"Mario","Room":"PortugalVSDenmark","body":"great match!"},"notification":{"title":"You got message","body":"Hello World Android!"}"#),
    ]
    for (fields, members) in cases {
        let push = try #require(mapGorushFCMNotification(try decodeAndroid(fields)).push)
        #expect(push.messages.map { text($0.body) } == [fcmTokenA, fcmTokenA + "B"].map {
            #"{"message":{"# + members + #","token":""# + $0 + #""}}"#
        })
    }
    let quickStart = try decodeGorushRequest(try example("quick-start").body, limits: roomyLimits)
    let mapping = mapGorushFCMNotification(try #require(quickStart.first))
    #expect(mapping.push?.messages.map { text($0.body) } == [
        #"{"message":{"notification":{"title":"Hello World","body":"Your first notification!"},"token":"your_device_token"}}"#,
    ])
}

@Test("the Status push server's request, sent with platform 2, is delivered as gorush would deliver it")
func statusPushServerRequest() throws {
    let body = #"{"notifications":[{"tokens":[""# + fcmTokenA + #""],"platform":2,"message":"You have a new message","#
        + #""data":{"chat_id":"0x02ab","public_key":"0x04cd","count":3,"is_group":false}}]}"#
    let notification = try #require(try decodeGorushRequest(Array(body.utf8), limits: roomyLimits).first)
    let mapping = mapGorushFCMNotification(notification)
    #expect(mapping.failures.isEmpty)
    #expect(mapping.push?.app == nil)
    #expect(mapping.push?.messages.map { text($0.body) } == [
        #"{"message":{"data":{"chat_id":"0x02ab","count":"3","is_group":"false","public_key":"0x04cd"},"#
            + #""notification":{"body":"You have a new message"},"token":""# + fcmTokenA + #""}}"#,
    ])
    let body2 = try #require(mapping.push?.messages.first?.body)
    #expect(try sameJSON(body2, #"{"message":{"token":""# + fcmTokenA + #"","notification":{"body":"You have a new message"},"#
        + #""data":{"is_group":"false","count":"3","public_key":"0x04cd","chat_id":"0x02ab"}}}"#))
}

@Test("the app is the extension field's, never the topic's")
func fcmAppIsTheExtensionFields() throws {
    #expect(mapGorushFCMNotification(try decodeAndroid(#""app":"toot","topic":"news""#)).push?.app == "toot")
    #expect(mapGorushFCMNotification(try decodeAndroid(#""topic":"com.example.app""#)).push?.app == nil)
}

@Test("strings in the message go through the one JSON escaping")
func fcmStringsAreEscaped() throws {
    let push = try #require(mapGorushFCMNotification(try decodeAndroid(#""message":"a\"b\\c\n\u0001é<&>","data":{"k\"":"v\n"}"#)).push)
    let body = try #require(push.messages.first?.body)
    #expect(text(body).contains(#""data":{"k\"":"v\n"},"notification":{"body":"a\"b\\c\n\u0001é<&>"}"#))
    #expect(try sameJSON(body, #"{"message":{"data":{"k\"":"v\n"},"notification":{"body":"a\"b\\c\n\u0001é<&>"},"token":""#
        + fcmTokenA + #""}}"#))
}
