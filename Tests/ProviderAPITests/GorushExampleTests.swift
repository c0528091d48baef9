// gorush's README examples (appleboy/gorush README.md: the quick start,
// "Web API" and "iOS Example"), byte for byte from
// Tests/Fixtures/gorush-readme, and what gorush would send to APNs for
// them: the payload of buildIOSPayload/iosAlertDictionary and apns2's
// headers.

import Foundation
@testable import ProviderAPI
import RelayCore
import Testing

/// One README example: its file under Tests/Fixtures/gorush-readme (the
/// README's text; the environments example is a diff there, its `+` marks
/// made spaces) and the payload of each of its notifications (nil: not
/// platform 1).
struct GorushExample: Sendable, CustomTestStringConvertible {
    var file: String
    var payloads: [String?]
    var pushType = "alert"
    var testDescription: String { file }

    /// The example's bytes, as in the README.
    var body: [UInt8] {
        get throws {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/gorush-readme/\(file).json")
            return Array(try Data(contentsOf: url))
        }
    }
}

let gorushExamples: [GorushExample] = [
    GorushExample(file: "ios-apns-api", payloads: [#"{"aps":{"alert":{"title":"Hello iOS","body":"Hello World iOS!"}}}"#]),
    // gorush's iOS path never reads `apns` (FCM's APNs config): the sound
    // stays out of the payload.
    GorushExample(file: "ios-with-custom-sound",
                  payloads: [#"{"aps":{"alert":{"title":"Important Alert","body":"Critical notification"}}}"#]),
    GorushExample(file: "multiple-platforms", payloads: [#"{"aps":{"alert":"Hello iOS!"}}"#, nil]),
    GorushExample(file: "ios-example-normal", payloads: [#"{"aps":{"alert":"Hello World iOS!"}}"#]),
    GorushExample(file: "ios-example-alert-badge", payloads: [
        #"{"aps":{"alert":{"action-loc-key":"PLAY","body":"Bob wants to play poker","title":"Game Request"},"badge":5}}"#,
    ]),
    GorushExample(file: "ios-example-sound-badge", payloads: [
        #"{"aps":{"alert":"You got your emails.","badge":9,"sound":{"critical":1,"name":"default","volume":1}}}"#,
    ]),
    GorushExample(file: "ios-example-data", payloads: [#"{"aps":{"alert":"Hello World iOS!"},"key1":"welcome","key2":2}"#]),
    GorushExample(file: "ios-example-environments", payloads: [#"{"aps":{"alert":"Hello World iOS Production!"}}"#,
                                                               #"{"aps":{"alert":"Hello World iOS Sandbox!"}}"#]),
    GorushExample(file: "ios-example-live-activity", payloads: [#"""
        {"aps":{"alert":{"title":"Team 1 vs Team 2","body":"Kick-off! The match has started."},
         "content-state":{"homeScore":0,"awayScore":0,"minute":1,"period":"1H"},"event":"start","timestamp":1685952000,
         "attributes-type":"FootballMatchAttributes",
         "attributes":{"homeTeam":"Team 1","awayTeam":"Team 2","league":"Premier League"}}}
        """#], pushType: "liveactivity"),
    GorushExample(file: "quick-start", payloads: [nil]),
]

func example(_ file: String) throws -> GorushExample { try #require(gorushExamples.first { $0.file == file }) }

/// The example with its placeholder tokens replaced by real ones.
func withRealTokens(_ example: GorushExample) throws -> [UInt8] {
    let body = String(decoding: try example.body, as: UTF8.self)
        .replacingOccurrences(of: "\"token_a\"", with: "\"\(tokenA)\"")
        .replacingOccurrences(of: "\"token_b\"", with: "\"\(tokenB)\"")
        .replacingOccurrences(of: "\"push_to_start_token\"", with: "\"\(tokenA)\"")
    return Array(body.utf8)
}

@Test("gorush's README examples give the payload and headers gorush would send", arguments: gorushExamples)
func readmeExampleGivesGorushsPayload(_ example: GorushExample) throws {
    let notifications = try decodeGorushRequest(try example.body, limits: roomyLimits)
    #expect(notifications.count == example.payloads.count)
    for (notification, expected) in zip(notifications, example.payloads) {
        guard let expected else {
            #expect(notification.platform != 1)
            continue
        }
        #expect(try sameJSON(gorushPayload(for: notification), expected))
        #expect(lines(gorushHeaders(for: notification)) == ["apns-push-type: " + example.pushType])
    }
}

@Test("the README's placeholder tokens fail as APNs would answer them, one log entry per token")
func readmePlaceholderTokensFailAsBadDeviceToken() throws {
    let notifications = try decodeGorushRequest(try example("ios-example-normal").body, limits: roomyLimits)
    let mapping = mapGorushNotification(try #require(notifications.first))
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.token) == ["token_a", "token_b"])
    #expect(mapping.failures.allSatisfy { $0.error == "BadDeviceToken" && $0.status == nil })
    #expect(mapping.failures.allSatisfy { $0.message == "Hello World iOS!" && $0.platform == "ios" })
}

@Test("the README examples with real tokens map to pushes with the example's topic and environment")
func readmeExamplesWithRealTokensMapToPushes() throws {
    let environments = try decodeGorushRequest(try withRealTokens(try example("ios-example-environments")), limits: roomyLimits)
    let pushes = environments.map(mapGorushNotification)
    #expect(pushes.map { $0.push?.environment } == [.production, .development])
    #expect(pushes.allSatisfy { $0.failures.isEmpty && $0.push?.tokens == [tokenA, tokenB] && $0.push?.topic == nil })

    let live = try decodeGorushRequest(try withRealTokens(try example("ios-example-live-activity")), limits: roomyLimits)
    let mapping = mapGorushNotification(try #require(live.first))
    #expect(mapping.push?.topic == "com.example.app.push-type.liveactivity")
    #expect(lines(mapping.push?.headers ?? []) == ["apns-push-type: liveactivity"])
}

@Test("the quick start's Android notification fails without touching APNs, as android, and counts nothing")
func quickStartAndroidNotificationFails() throws {
    let notifications = try decodeGorushRequest(try example("quick-start").body, limits: roomyLimits)
    let mapping = mapGorushNotification(try #require(notifications.first))
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.platform) == ["android"])
    #expect(mapping.failures.first?.error.contains("platform 2") == true)
    #expect(gorushCount(of: notifications) == 0)
}
