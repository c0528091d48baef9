import APNsCore
import HTTPCore
import ProviderAPI
import Testing

@Suite("The provider API's broadcast calls")
struct BroadcastCallTests {
    static let channel = "dGVzdC1jaGFubmVsLWlkMTI="
    static let payload = Array(#"{"aps":{"event":"end"}}"#.utf8)
    static let create = Array(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8)
    static let broadcastHeaders: HTTPHeaders = [
        "authorization": "Bearer key", "apns-channel-id": channel, "apns-push-type": "liveactivity",
        "apns-priority": "5", "apns-request-id": "0b7e3c5a-1f2d-4c6b-9a8e-7d6c5b4a3f21", "x-other": "1",
    ]

    /// (call, method, headers, body, the fields passed on, or the refusal's reason).
    static let table: [(APNsBroadcastCall, String, HTTPHeaders, [UInt8], [String]?, String?)] = [
        (.broadcast, "POST", broadcastHeaders, payload,
         ["apns-request-id", "apns-channel-id", "apns-push-type", "apns-priority"], nil),
        (.broadcast, "GET", broadcastHeaders, payload, nil, "MethodNotAllowed"),
        (.broadcast, "POST", ["apns-push-type": "liveactivity"], payload, nil, "MissingChannelId"),
        (.channels, "POST", ["authorization": "Bearer key", "apns-channel-id": channel], create, [], nil),
        (.channels, "POST", [:], Array("{}".utf8), nil, "MissingPushType"),
        (.channels, "GET", ["apns-channel-id": channel], [], ["apns-channel-id"], nil),
        (.channels, "DELETE", ["apns-channel-id": channel, "apns-request-id": "r"], [],
         ["apns-request-id", "apns-channel-id"], nil),
        (.channels, "DELETE", [:], [], nil, "MissingChannelId"),
        (.channels, "PUT", [:], [], nil, "MethodNotAllowed"),
        (.allChannels, "GET", ["authorization": "Bearer key"], [], [], nil),
        (.allChannels, "DELETE", [:], [], nil, "MethodNotAllowed"),
    ]

    @Test("checked as APNs checks them; only APNs' fields pass on, never authorization", arguments: table)
    func check(_ row: (APNsBroadcastCall, String, HTTPHeaders, [UInt8], [String]?, String?)) {
        switch checkBroadcastCall(row.0, method: row.1, headers: row.2, body: row.3) {
        case .success(let checked):
            #expect(row.5 == nil)
            #expect(checked.headers.map(\.name) == row.4)
            // A body goes only with a broadcast or a create.
            #expect(checked.body == (row.1 == "POST" ? row.3 : []))
        case .failure(let refusal):
            #expect(refusal.reason == row.5)
            #expect(refusal.status == (row.5 == "MethodNotAllowed" ? 405 : 400))
        }
    }

    @Test("APNs' answer passes back as it came")
    func answered() {
        let fields = [HTTPField(name: "apns-request-id", value: "r"), HTTPField(name: "apns-channel-id", value: Self.channel)]
        let answer = broadcastAnswer(for: .answered(status: 201, headers: fields, body: []), requestID: "other")
        #expect(answer.status == 201)
        #expect(answer.headers == fields)
        #expect(answer.body.isEmpty)
    }

    @Test("no answer from APNs: 503 ServiceUnavailable with Retry-After and the request id",
          arguments: [DeliveryOutcome.answerTimedOut, .overloaded, .allConnectionsDown, .connectFailed("refused")])
    func unanswered(_ outcome: DeliveryOutcome) {
        let answer = broadcastAnswer(for: .failed(outcome), requestID: "r")
        #expect(answer.status == 503)
        #expect(answer.headers.first { $0.name == "apns-request-id" }?.value == "r")
        #expect(answer.headers.contains { $0.name == "retry-after" })
        #expect(!answer.headers.contains { $0.name == "apns-id" })
        #expect(String(decoding: answer.body, as: UTF8.self) == #"{"reason":"ServiceUnavailable"}"#)
    }

    @Test("the relay's own refusal: APNs' status, reason and the request id")
    func refusal() {
        let answer = broadcastAnswer(for: APNsBroadcastRefusal(.topicMismatch), requestID: "r")
        #expect(answer.status == 403)
        #expect(answer.headers == [HTTPField(name: "apns-request-id", value: "r")])
        #expect(String(decoding: answer.body, as: UTF8.self) == #"{"reason":"TopicMismatch"}"#)
    }
}
