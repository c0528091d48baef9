// What a platform 2 notification may not send: gorush's CheckMessage and
// firebase-admin-go's validateMessage fail every message of it (one log
// entry per token here, the topic's too); a token FCM could never take
// fails alone; a field of the wrong type refuses the whole request, as Go's
// binding does; platform 3 is a log entry per token.

import FCMCore
import JSON
@testable import ProviderAPI
import RelayCore
import Testing

/// Expected: the `error` of every entry.
let fcmRefusalCases: [FieldsCase] = [
    FieldsCase(fields: #""topic":"a","condition":"'b' in topics""#,
                   expected: "exactly one of fid, token, topic or condition must be specified"),
    FieldsCase(fields: #""topic":"bad topic""#, expected: "malformed topic name"),
    FieldsCase(fields: #""topic":"/topics/""#, expected: "malformed topic name"),
    FieldsCase(fields: #""priority":"urgent""#, expected: "priority must be 'normal' or 'high'"),
    FieldsCase(fields: #""android":{"priority":"max"}"#, expected: "priority must be 'normal' or 'high'"),
    FieldsCase(fields: #""android":{"ttl":"-1s"}"#, expected: "ttl duration must not be negative"),
    FieldsCase(fields: #""android":{"ttl":"2419201s"}"#,
                   expected: "the message's TimeToLive field must be an integer between 0 and 2419200 (4 weeks)"),
    FieldsCase(fields: #""time_to_live":9999999999999"#,
                   expected: "the message's TimeToLive field must be an integer between 0 and 2419200 (4 weeks)"),
    FieldsCase(fields: #""android":{"notification":{"color":"red"}}"#, expected: "color must be in the #RRGGBB form"),
    FieldsCase(fields: ##""notification":{"color":"#12345"}"##, expected: "color must be in the #RRGGBB form"),
    FieldsCase(fields: #""android":{"notification":{"title_loc_args":["a"]}}"#,
                   expected: "titleLocKey is required when specifying titleLocArgs"),
    FieldsCase(fields: #""android":{"notification":{"body_loc_args":["a"]}}"#,
                   expected: "bodyLocKey is required when specifying bodyLocArgs"),
    FieldsCase(fields: #""image":"not a url""#, expected: #"invalid image URL: "not a url""#),
    FieldsCase(fields: #""android":{"notification":{"image":"relative.png"}}"#, expected: #"invalid image URL: "relative.png""#),
    FieldsCase(fields: #""data":{"k":""# + String(repeating: "v", count: 4096) + #""}"#,
                   expected: "data of 4097 bytes is over FCM's limit of 4096 bytes"),
    FieldsCase(fields: #""android":{"data":{"k":""# + String(repeating: "é", count: 2048) + #""}}"#,
                   expected: "data of 4097 bytes is over FCM's limit of 4096 bytes"),
]

@Test("what gorush or its FCM client refuses fails every token, nothing sent", arguments: fcmRefusalCases)
func fcmRefusalFailsEveryToken(_ refusal: FieldsCase) throws {
    let notification = try decodeAndroid(#""notif_id":"n1","message":"m","app":"toot","# + refusal.fields)
    let mapping = mapGorushFCMNotification(notification)
    #expect(mapping.push == nil)
    let targets = [notification.fcm.condition.isEmpty ? notification.topic : notification.fcm.condition]
        .filter { !$0.isEmpty } + [fcmTokenA]
    #expect(mapping.failures == targets.map {
        FailedPushLog(notificationID: "n1", platform: "android", token: $0, message: "m", error: refusal.expected, app: "toot")
    })
}

@Test("data of exactly FCM's 4096 bytes is sent")
func fcmDataAtTheLimitIsSent() throws {
    let fits = try decodeAndroid(#""data":{"k":""# + String(repeating: "v", count: 4095) + #""}"#)
    #expect(mapGorushFCMNotification(fits).push?.messages.count == 1)
    let numbers = try decodeAndroid(#""data":{"n":1e3}"#)  // counted as sent: "1000"
    #expect(mapGorushFCMNotification(numbers).failures.isEmpty)
}

@Test("no token and no topic is gorush's one entry; over 500 tokens fail them all")
func fcmTokenCounts() throws {
    let none = mapGorushFCMNotification(try decodeAndroid(#""tokens":[],"message":"m""#))
    #expect(none.push == nil)
    #expect(none.failures.map(\.token) == [""])
    #expect(none.failures.first?.error == "please provide at least one device token")
    #expect(none.failures.first?.platform == "android")

    let many = (0..<501).map { #""t\#($0)""# }.joined(separator: ",")
    let over = mapGorushFCMNotification(try decodeAndroid(#""tokens":[\#(many)]"#))
    #expect(over.push == nil && over.failures.count == 501)
    #expect(over.failures.allSatisfy { $0.error == "you can specify up to 500 device registration tokens per invocation" })
    let at = (0..<500).map { #""t\#($0)""# }.joined(separator: ",")
    #expect(mapGorushFCMNotification(try decodeAndroid(#""tokens":[\#(at)]"#)).push?.messages.count == 500)
}

@Test("a token FCM could never take fails alone, INVALID_ARGUMENT; the others are sent")
func fcmBadTokensFailAlone() throws {
    let bad = ["", "with space", "quote\"", "ü", String(repeating: "a", count: 4097), "/topics/x"]
    let list = ([fcmTokenA] + bad + ["B"]).map { "\"" + $0.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
    let mapping = mapGorushFCMNotification(try decodeAndroid(#""message":"m","tokens":["# + list.joined(separator: ",") + "]"))
    #expect(mapping.push?.messages.map(\.token.text) == [fcmTokenA, "B"])
    #expect(mapping.failures.map(\.token) == bad)
    #expect(mapping.failures.allSatisfy {
        $0.reason == "INVALID_ARGUMENT" && $0.error == "The registration token is not a valid FCM registration token"
            && $0.platform == "android" && $0.status == nil && $0.message == "m"
    })
    let onlyBad = mapGorushFCMNotification(try decodeAndroid(#""tokens":["not valid"]"#))
    #expect(onlyBad.push == nil && onlyBad.failures.count == 1)
}

/// Expected: the request error's message.
let fcmWrongTypeCases: [FieldsCase] = [
    FieldsCase(fields: #""image":true"#, expected: "notifications[0].image must be a string, not a boolean."),
    FieldsCase(fields: #""condition":1"#, expected: "notifications[0].condition must be a string, not a number."),
    FieldsCase(fields: #""collapse_key":[]"#, expected: "notifications[0].collapse_key must be a string, not an array."),
    FieldsCase(fields: #""time_to_live":"60""#, expected: "notifications[0].time_to_live must be an integer, not a string."),
    FieldsCase(fields: #""time_to_live":-1"#, expected: "notifications[0].time_to_live must be an integer of 0 or more, not -1."),
    FieldsCase(fields: #""time_to_live":1.5"#,
                     expected: "notifications[0].time_to_live must be an integer between -9223372036854775808 and 9223372036854775807, not \"1.5\"."),
    FieldsCase(fields: #""notification":[]"#, expected: "notifications[0].notification must be an object, not an array."),
    FieldsCase(fields: #""notification":{"title":1}"#, expected: "notifications[0].notification.title must be a string, not a number."),
    FieldsCase(fields: #""notification":{"body_loc_args":"a"}"#,
                     expected: "notifications[0].notification.body_loc_args must be an array of strings, not a string."),
    FieldsCase(fields: #""android":"x""#, expected: "notifications[0].android must be an object, not a string."),
    FieldsCase(fields: #""android":{"ttl":5}"#, expected: "notifications[0].android.ttl must be a string, not a number."),
    FieldsCase(fields: #""android":{"ttl":"1.0s"}"#,
                     expected: #"notifications[0].android.ttl must be a duration such as "3600s", not "1.0s"."#),
    FieldsCase(fields: #""android":{"ttl":"abc"}"#,
                     expected: #"notifications[0].android.ttl must be a duration such as "3600s", not "abc"."#),
    FieldsCase(fields: #""android":{"ttl":"1.2.3s"}"#,
                     expected: #"notifications[0].android.ttl must be a duration such as "3600s", not "1.2.3s"."#),
    FieldsCase(fields: #""android":{"ttl":"99999999999999999s"}"#,
                     expected: #"notifications[0].android.ttl must be a duration such as "3600s", not "99999999999999999s"."#),
    FieldsCase(fields: #""android":{"data":{"a":1}}"#, expected: "notifications[0].android.data.a must be a string, not a number."),
    FieldsCase(fields: #""android":{"direct_boot_ok":"yes"}"#,
                     expected: "notifications[0].android.direct_boot_ok must be true or false, not a string."),
    FieldsCase(fields: #""android":{"fcm_options":{"analytics_label":2}}"#,
                     expected: "notifications[0].android.fcm_options.analytics_label must be a string, not a number."),
    FieldsCase(fields: #""fcm_options":[]"#, expected: "notifications[0].fcm_options must be an object, not an array."),
    FieldsCase(fields: #""android":{"notification":{"visibility":"ALL"}}"#,
                     expected: #"notifications[0].android.notification.visibility must be one of PRIVATE, PUBLIC, SECRET, not "ALL"."#),
    FieldsCase(fields: #""android":{"notification":{"notification_count":1.5}}"#,
                     expected: "notifications[0].android.notification.notification_count must be an integer between -9223372036854775808 and 9223372036854775807, not \"1.5\"."),
    FieldsCase(fields: #""android":{"notification":{"sticky":1}}"#,
                     expected: "notifications[0].android.notification.sticky must be true or false, not a number."),
]

@Test("an FCM field of the wrong type refuses the whole request, whatever the platform", arguments: fcmWrongTypeCases)
func fcmWrongTypeRefusesTheRequest(_ wrong: FieldsCase) {
    for platform in [1, 2] {
        let body = #"{"notifications":[{"platform":\#(platform),"tokens":["t"],"# + wrong.fields + "}]}"
        #expect(throws: ProviderRequestError(wrong.expected)) {
            try decodeGorushRequest(Array(body.utf8), limits: roomyLimits)
        }
    }
}

@Test("FCM fields with null are fields not given, and platform 1 ignores them")
func fcmNullFieldsAndPlatform1() throws {
    let nulls = try decodeAndroid(#""image":null,"condition":null,"notification":null,"android":null,"fcm_options":null,"collapse_key":null,"time_to_live":null"#)
    #expect(nulls.fcm == ProviderFCMFields())
    #expect(nulls.fcmStorage == nil)
    let ios = try decodeOne(#""image":"https://e.x/i.png","android":{"priority":"high"},"condition":"c""#)
    #expect(ios.fcm.android?.priority == "high")
    #expect(mapGorushNotification(ios).push.map { text($0.payload) } == #"{"aps":{}}"#)
}

@Test("platform 3 (Huawei) is one failed log per token saying it is not served; an unknown platform too")
func huaweiIsNotServed() throws {
    let body = #"{"notifications":[{"platform":3,"tokens":["h1","h2"],"message":"Hello World Huawei!","title":"t"},"#
        + #"{"platform":7,"tokens":["x"]},{"platform":3,"tokens":[]}]}"#
    let notifications = try decodeGorushRequest(Array(body.utf8), limits: roomyLimits)
    let huawei = mapGorushNotification(notifications[0])
    #expect(huawei.push == nil)
    #expect(huawei.failures == ["h1", "h2"].map {
        FailedPushLog(platform: "huawei", token: $0, message: "Hello World Huawei!",
                      error: "platform 3 (Huawei Push Kit) is not served: this relay sends to APNs (platform 1) and FCM (platform 2)")
    })
    #expect(mapGorushNotification(notifications[1]).failures.map(\.error) == [
        "platform 7 is not supported: this relay sends to APNs (platform 1) and FCM (platform 2)",
    ])
    #expect(mapGorushNotification(notifications[2]).failures.map { [$0.token, $0.platform] } == [["", "huawei"]])
}

@Test("platform 2 counts where FCM serves the notification, as gorush with Android enabled: tokens plus one per topic, none per condition")
func countsWithFCM() throws {
    let body = """
        {"notifications":[{"platform":1,"tokens":["a","b"],"topic":"t"},{"platform":2,"tokens":["d"],"topic":"x"},
        {"platform":2,"tokens":["e","f"],"condition":"'c' in topics"},{"platform":3,"tokens":["h"]}]}
        """
    let notifications = try decodeGorushRequest(Array(body.utf8), limits: roomyLimits)
    #expect(gorushCount(of: notifications) == 3)
    #expect(gorushCount(of: notifications, countingFCM: { _ in true }) == 7)
    // Only the notifications whose app sends through FCM.
    #expect(gorushCount(of: notifications, countingFCM: { $0.topic == "x" }) == 5)
}
