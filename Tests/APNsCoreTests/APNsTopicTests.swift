// The topic each push type needs (Apple's header table, "Sending
// notification requests to APNs") and the bundle id a suffixed topic names.

import APNsCore
import Testing

struct APNsTopicTests {
    @Test("each push type's topic is the app's with Apple's suffix, added once", arguments: [
        ("alert", "com.example.app", "com.example.app"),
        ("background", "com.example.app", "com.example.app"),
        ("mdm", "com.apple.mgmt.External.1", "com.apple.mgmt.External.1"),
        ("location", "com.example.app", "com.example.app.location-query"),
        ("voip", "com.example.app", "com.example.app.voip"),
        ("complication", "com.example.app", "com.example.app.complication"),
        ("fileprovider", "com.example.app", "com.example.app.pushkit.fileprovider"),
        ("liveactivity", "com.example.app", "com.example.app.push-type.liveactivity"),
        ("pushtotalk", "com.example.app", "com.example.app.voip-ptt"),
        ("widgets", "com.example.app", "com.example.app.push-type.widgets"),
        ("controls", "com.example.app", "com.example.app.push-type.controls"),
        // An app configured with the suffixed topic (a VoIP certificate's UID).
        ("voip", "com.example.app.voip", "com.example.app.voip"),
        ("liveactivity", "com.example.app.push-type.liveactivity", "com.example.app.push-type.liveactivity"),
        ("", "com.example.app", "com.example.app"),
        ("LiveActivity", "com.example.app", "com.example.app"),
    ])
    func topicForPushType(_ pushType: String, _ appTopic: String, _ topic: String) {
        #expect(apnsTopic(appTopic: appTopic, pushType: pushType) == topic)
    }

    @Test("a topic with a push type's suffix names its bundle id; another topic names none", arguments: [
        ("com.example.app.push-type.liveactivity", "com.example.app"),
        ("com.example.app.voip", "com.example.app"),
        ("com.example.app.voip-ptt", "com.example.app"),
        ("com.example.app.complication", "com.example.app"),
        ("com.example.app.pushkit.fileprovider", "com.example.app"),
        ("com.example.app.location-query", "com.example.app"),
        ("com.example.app.push-type.widgets", "com.example.app"),
        ("com.example.app.push-type.controls", "com.example.app"),
        ("com.example.app", nil),
        ("", nil),
        (".push-type.liveactivity", nil),
        ("com.example.app.push-type.liveactivity.x", nil),
        ("com.example.app.PUSH-TYPE.LIVEACTIVITY", nil),
        ("é.voip", "é"),
    ] as [(String, String?)])
    func bundleIDOfTopic(_ topic: String, _ bundle: String?) {
        #expect(apnsBundleID(ofTopic: topic) == bundle)
    }

    @Test("a topic made for a push type names the app's topic back")
    func topicRoundTrip() {
        for pushType in ["location", "voip", "complication", "fileprovider", "liveactivity", "pushtotalk", "widgets",
                         "controls"] {
            #expect(apnsBundleID(ofTopic: apnsTopic(appTopic: "org.example.x", pushType: pushType)) == "org.example.x")
        }
    }
}
