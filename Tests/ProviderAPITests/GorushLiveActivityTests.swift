// gorush's Live Activity fields (notify/notification.go, setLiveActivityFields
// in notify/notification_apns.go, v1.22.0) and Apple's `input-push-token`
// and `input-push-channel`: each field's payload byte for byte as gorush
// and apns2 (payload/builder.go, the `aps` struct's field order) write it,
// the types the decoder refuses, and the topic and push type they go with.

@testable import ProviderAPI
import Testing

let liveActivityPayloads: [FieldCase] = [
    FieldCase(fields: #""event":"start""#, payload: #"{"aps":{"event":"start"}}"#),
    FieldCase(fields: #""event":"end""#, payload: #"{"aps":{"event":"end"}}"#),
    // gorush passes any event on (apns2's ELiveActivityEvent is a string).
    FieldCase(fields: #""event":"later""#, payload: #"{"aps":{"event":"later"}}"#),
    FieldCase(fields: #""event":"""#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""timestamp":1685952000"#, payload: #"{"aps":{"timestamp":1685952000}}"#),
    FieldCase(fields: #""timestamp":-1"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""stale-date":1685955600"#, payload: #"{"aps":{"stale-date":1685955600}}"#),
    FieldCase(fields: #""stale-date":0"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""dismissal-date":1685959200"#, payload: #"{"aps":{"dismissal-date":1685959200}}"#),
    FieldCase(fields: #""dismissal-date":-7"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""content-state":{"minute":1}"#, payload: #"{"aps":{"content-state":{"minute":1}}}"#),
    FieldCase(fields: #""content-state":{}"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""attributes-type":"FootballMatchAttributes""#,
              payload: #"{"aps":{"attributes-type":"FootballMatchAttributes"}}"#),
    FieldCase(fields: #""attributes":{"league":"Premier League"}"#,
              payload: #"{"aps":{"attributes":{"league":"Premier League"}}}"#),
    FieldCase(fields: #""attributes":{}"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""input-push-token":1"#, payload: #"{"aps":{"input-push-token":1}}"#),
    FieldCase(fields: #""input-push-token":0"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""input-push-token":-1"#, payload: #"{"aps":{}}"#),
    FieldCase(fields: #""input-push-channel":"dHN0LXNyY2gtY2hubA==""#,
              payload: #"{"aps":{"input-push-channel":"dHN0LXNyY2gtY2hubA=="}}"#),
    FieldCase(fields: #""input-push-channel":"""#, payload: #"{"aps":{}}"#),
    // null is a field not given, as Go's decoder leaves it.
    FieldCase(fields: #""event":null,"timestamp":null,"stale-date":null,"dismissal-date":null,"content-state":null,"#
                + #""attributes-type":null,"attributes":null,"input-push-token":null,"input-push-channel":null"#,
              payload: #"{"aps":{}}"#),
    // Every field at once, written in apns2's order (alert first, the
    // Live Activity keys after url-args, Apple's input keys last) whatever
    // the sender's order; objects as written (Go would sort their keys:
    // they are sorted here, so the bytes are gorush's too).
    FieldCase(fields: #""input-push-channel":"Y2g=","input-push-token":1,"attributes":{"awayTeam":"B","homeTeam":"A"},"#
                + #""attributes-type":"MatchAttributes","timestamp":1685952000,"event":"start","stale-date":1685955600,"#
                + #""dismissal-date":1685959200,"content-state":{"away":0,"home":1},"relevance-score":0.5,"#
                + #""alert":{"title":"Kick-off","body":"A vs B"}"#,
              payload: #"{"aps":{"alert":{"body":"A vs B","title":"Kick-off"},"relevance-score":0.5,"#
                + #""content-state":{"away":0,"home":1},"dismissal-date":1685959200,"stale-date":1685955600,"#
                + #""event":"start","timestamp":1685952000,"attributes-type":"MatchAttributes","#
                + #""attributes":{"awayTeam":"B","homeTeam":"A"},"input-push-token":1,"input-push-channel":"Y2g="}}"#),
]

@Test("each Live Activity field gives gorush's payload, byte for byte", arguments: liveActivityPayloads)
func liveActivityFieldGivesGorushsPayload(_ field: FieldCase) throws {
    let mapping = mapGorushNotification(try decodeOne(field.fields))
    let push = try #require(mapping.push)
    #expect(mapping.failures.isEmpty)
    #expect(text(push.payload) == field.payload)
}

@Test("a Live Activity goes with gorush's push type and the topic as written")
func liveActivityHeadersAndTopic() throws {
    let fields = #""push_type":"liveactivity","topic":"com.example.app.push-type.liveactivity","event":"update""#
    let push = try #require(mapGorushNotification(try decodeOne(fields)).push)
    #expect(lines(push.headers) == ["apns-push-type: liveactivity"])
    #expect(push.topic == "com.example.app.push-type.liveactivity")
    #expect(push.bundleID == "com.example.app")
    #expect(push.pushType == "liveactivity")
}

let liveActivityRefusals: [FieldsCase] = [
    FieldsCase(fields: #""event":1"#, expected: "notifications[0].event must be a string, not a number."),
    FieldsCase(fields: #""timestamp":"1685952000""#, expected: "notifications[0].timestamp must be an integer, not a string."),
    FieldsCase(fields: #""timestamp":1.5"#,
               expected: #"notifications[0].timestamp must be an integer between -9223372036854775808 and 9223372036854775807, not "1.5"."#),
    FieldsCase(fields: #""stale-date":true"#, expected: "notifications[0].stale-date must be an integer, not a boolean."),
    FieldsCase(fields: #""dismissal-date":[]"#, expected: "notifications[0].dismissal-date must be an integer, not an array."),
    FieldsCase(fields: #""content-state":[1]"#, expected: "notifications[0].content-state must be an object, not an array."),
    FieldsCase(fields: #""content-state":"{}""#, expected: "notifications[0].content-state must be an object, not a string."),
    FieldsCase(fields: #""attributes-type":{}"#, expected: "notifications[0].attributes-type must be a string, not an object."),
    FieldsCase(fields: #""attributes":"x""#, expected: "notifications[0].attributes must be an object, not a string."),
    FieldsCase(fields: #""input-push-token":true"#, expected: "notifications[0].input-push-token must be an integer, not a boolean."),
    FieldsCase(fields: #""input-push-token":1e0"#,
               expected: #"notifications[0].input-push-token must be an integer between -9223372036854775808 and 9223372036854775807, not "1e0"."#),
    FieldsCase(fields: #""input-push-channel":7"#, expected: "notifications[0].input-push-channel must be a string, not a number."),
]

@Test("a Live Activity field of the wrong type refuses the request, as Go's binding does", arguments: liveActivityRefusals)
func liveActivityFieldOfWrongTypeRefused(_ field: FieldsCase) {
    #expect(throws: ProviderRequestError(field.expected)) { try decodeOne(field.fields) }
}

@Test("a data.aps beside any Live Activity field fails every token, as gorush would panic",
      arguments: [#""event":"end""#, #""timestamp":1"#, #""stale-date":1"#, #""dismissal-date":1"#,
                  #""content-state":{"a":1}"#, #""attributes-type":"T""#, #""attributes":{"a":1}"#,
                  #""input-push-token":1"#, #""input-push-channel":"c""#])
func dataAPSBesideLiveActivityFieldFails(_ fields: String) throws {
    let mapping = mapGorushNotification(try decodeOne(fields + #","data":{"aps":{}}"#))
    #expect(mapping.push == nil)
    #expect(mapping.failures.map(\.token) == [tokenA])
}
