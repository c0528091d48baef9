// gorush's README examples (appleboy/gorush README.md, "Web API" and "iOS
// Example"), byte for byte, and what gorush would send to APNs for them:
// the payload of buildIOSPayload/iosAlertDictionary and apns2's headers.

@testable import ProviderAPI
import RelayCore
import Testing

struct GorushExample: Sendable, CustomTestStringConvertible {
    var name: String
    var body: String
    /// The payload of each notification gorush sends (nil: not platform 1).
    var payloads: [String?]
    var pushTypes: [String] = ["alert"]
    var testDescription: String { name }
}

let gorushExamples: [GorushExample] = [
    GorushExample(name: "iOS (APNS) API", body: """
        {
          "notifications": [
            {
              "tokens": ["ios_device_token"],
              "platform": 1,
              "title": "Hello iOS",
              "message": "Hello World iOS!"
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":{"title":"Hello iOS","body":"Hello World iOS!"}}}"#]),
    // gorush's iOS path never reads `apns` (FCM's APNs config): the sound
    // stays out of the payload.
    GorushExample(name: "iOS with Custom Sound", body: """
        {
          "notifications": [
            {
              "tokens": ["ios_device_token"],
              "platform": 1,
              "title": "Important Alert",
              "message": "Critical notification",
              "apns": {
                "payload": {
                  "aps": {
                    "sound": {
                      "name": "custom.wav",
                      "critical": 1,
                      "volume": 0.8
                    }
                  }
                }
              }
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":{"title":"Important Alert","body":"Critical notification"}}}"#]),
    GorushExample(name: "Multiple Platforms", body: """
        {
          "notifications": [
            {
              "tokens": ["ios_token"],
              "platform": 1,
              "message": "Hello iOS!"
            },
            {
              "tokens": ["android_token"],
              "platform": 2,
              "message": "Hello Android!"
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":"Hello iOS!"}}"#, nil]),
    GorushExample(name: "iOS Example: normal notification", body: """
        {
          "notifications": [
            {
              "tokens": ["token_a", "token_b"],
              "platform": 1,
              "message": "Hello World iOS!"
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":"Hello World iOS!"}}"#]),
    GorushExample(name: "iOS Example: alert with an action button and a badge", body: """
        {
          "notifications": [
            {
              "tokens": ["token_a", "token_b"],
              "platform": 1,
              "badge": 5,
              "alert": {
                "title": "Game Request",
                "body": "Bob wants to play poker",
                "action-loc-key": "PLAY"
              }
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":{"action-loc-key":"PLAY","body":"Bob wants to play poker","title":"Game Request"},"badge":5}}"#]),
    GorushExample(name: "iOS Example: alert, sound and badge", body: """
        {
          "notifications": [
            {
              "tokens": ["token_a", "token_b"],
              "platform": 1,
              "message": "You got your emails.",
              "badge": 9,
              "sound": {
                "critical": 1,
                "name": "default",
                "volume": 1.0
              }
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":"You got your emails.","badge":9,"sound":{"critical":1,"name":"default","volume":1}}}"#]),
    GorushExample(name: "iOS Example: data", body: """
        {
          "notifications": [
            {
              "tokens": ["token_a", "token_b"],
              "platform": 1,
              "message": "Hello World iOS!",
              "data": {
                "key1": "welcome",
                "key2": 2
              }
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":"Hello World iOS!"},"key1":"welcome","key2":2}"#]),
    // The README's diff without its `+` marks.
    GorushExample(name: "iOS Example: production and development", body: """
        {
          "notifications": [
            {
              "tokens": ["token_a", "token_b"],
              "platform": 1,
              "production": true,
              "message": "Hello World iOS Production!"
            },
            {
              "tokens": ["token_a", "token_b"],
              "platform": 1,
              "development": true,
              "message": "Hello World iOS Sandbox!"
            }
          ]
        }
        """, payloads: [#"{"aps":{"alert":"Hello World iOS Production!"}}"#,
                        #"{"aps":{"alert":"Hello World iOS Sandbox!"}}"#], pushTypes: ["alert", "alert"]),
    GorushExample(name: "iOS Example: Live Activity push-to-start", body: """
        {
          "notifications": [
            {
              "tokens": ["push_to_start_token"],
              "platform": 1,
              "push_type": "liveactivity",
              "topic": "com.example.app.push-type.liveactivity",
              "event": "start",
              "timestamp": 1685952000,
              "content-state": {
                "homeScore": 0,
                "awayScore": 0,
                "minute": 1,
                "period": "1H"
              },
              "attributes-type": "FootballMatchAttributes",
              "attributes": {
                "homeTeam": "Team 1",
                "awayTeam": "Team 2",
                "league": "Premier League"
              },
              "alert": {
                "title": "Team 1 vs Team 2",
                "body": "Kick-off! The match has started."
              }
            }
          ]
        }
        """, payloads: [#"""
        {"aps":{"alert":{"title":"Team 1 vs Team 2","body":"Kick-off! The match has started."},
         "content-state":{"homeScore":0,"awayScore":0,"minute":1,"period":"1H"},"event":"start","timestamp":1685952000,
         "attributes-type":"FootballMatchAttributes",
         "attributes":{"homeTeam":"Team 1","awayTeam":"Team 2","league":"Premier League"}}}
        """#], pushTypes: ["liveactivity"]),
]

@Test("gorush's README examples give the payload and headers gorush would send", arguments: gorushExamples)
func readmeExampleGivesGorushsPayload(_ example: GorushExample) throws {
    let notifications = try decodeGorushRequest(Array(example.body.utf8), limits: roomyLimits)
    #expect(notifications.count == example.payloads.count)
    var pushTypes = example.pushTypes.makeIterator()
    for (notification, expected) in zip(notifications, example.payloads) {
        guard let expected else {
            #expect(notification.platform != 1)
            continue
        }
        #expect(try sameJSON(gorushPayload(for: notification), expected))
        #expect(lines(gorushHeaders(for: notification)) == ["apns-push-type: " + (pushTypes.next() ?? "alert")])
    }
}

@Test("the README's placeholder tokens fail as APNs would answer them, one log entry per token")
func readmePlaceholderTokensFailAsBadDeviceToken() throws {
    let example = try #require(gorushExamples.first { $0.name == "iOS Example: normal notification" })
    let notification = try #require(try decodeGorushRequest(Array(example.body.utf8), limits: roomyLimits).first)
    let mapping = mapGorushNotification(notification)
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.token) == ["token_a", "token_b"])
    #expect(mapping.failures.allSatisfy { $0.error == "BadDeviceToken" && $0.status == nil })
    #expect(mapping.failures.allSatisfy { $0.message == "Hello World iOS!" && $0.platform == "ios" })
}

@Test("the README examples with real tokens map to pushes with the example's topic and environment")
func readmeExamplesWithRealTokensMapToPushes() throws {
    let production = try #require(gorushExamples.first { $0.name == "iOS Example: production and development" })
    let body = production.body.replacingOccurrences(of: "\"token_a\"", with: "\"\(tokenA)\"")
        .replacingOccurrences(of: "\"token_b\"", with: "\"\(tokenB)\"")
    let pushes = try decodeGorushRequest(Array(body.utf8), limits: roomyLimits).map(mapGorushNotification)
    #expect(pushes.map { $0.push?.environment } == [.production, .development])
    #expect(pushes.allSatisfy { $0.failures.isEmpty && $0.push?.tokens == [tokenA, tokenB] })
    #expect(pushes.allSatisfy { $0.push?.topic == nil })

    let live = try #require(gorushExamples.first { $0.name.contains("Live Activity") })
    let liveBody = live.body.replacingOccurrences(of: "\"push_to_start_token\"", with: "\"\(tokenA)\"")
    let mapping = mapGorushNotification(try #require(try decodeGorushRequest(Array(liveBody.utf8), limits: roomyLimits).first))
    #expect(mapping.push?.topic == "com.example.app.push-type.liveactivity")
    #expect(lines(mapping.push?.headers ?? []) == ["apns-push-type: liveactivity"])
}

@Test("the quick start's Android notification fails without touching APNs, as android")
func quickStartAndroidNotificationFails() throws {
    let body = """
        {
            "notifications": [{
              "tokens": ["your_device_token"],
              "platform": 2,
              "title": "Hello World",
              "message": "Your first notification!"
            }]
          }
        """
    let notifications = try decodeGorushRequest(Array(body.utf8), limits: roomyLimits)
    let mapping = mapGorushNotification(try #require(notifications.first))
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.platform) == ["android"])
    #expect(mapping.failures.first?.error.contains("platform 2") == true)
    #expect(gorushCount(of: notifications) == 0)
}
