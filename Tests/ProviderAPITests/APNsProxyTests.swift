// The APNs-shaped proxy: Apple's documented example request ("Sending
// notification requests to APNs", the curl example and the sample request
// headers), each refusal as APNs answers it, and the answers.

import APNsCore
import HTTPCore
@testable import ProviderAPI
import RelayCore
import Testing

/// Apple's example: the curl of "Sending notification requests to APNs"
/// (`--header "apns-topic: ${TOPIC}" --header "apns-push-type: alert"
/// --header "authorization: bearer $AUTHENTICATION_TOKEN" --data
/// '{"aps":{"alert":"test"}}'`), and the sample request's other headers.
let appleExampleToken = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
let appleExampleHeaders = HTTPHeaders([
    ("apns-topic", "com.example.MyApp"),
    ("apns-push-type", "alert"),
    ("authorization", "bearer eyAia2lkIjog.eyAiaXNzIjogIkpFTUQ.MEYCIQDH"),
    ("apns-id", "eabeae54-14a8-11e5-b60b-1697f925ec7b"),
    ("apns-expiration", "0"),
    ("apns-priority", "10"),
    ("apns-collapse-id", "game1.score.identifier"),
    ("content-type", "application/json"),
    ("user-agent", "curl/7.88.1"),
])
let appleExampleBody = Array(#"{"aps":{"alert":"test"}}"#.utf8)

@Test("Apple's example request passes with its apns-* headers, never authorization")
func appleExampleRequestPasses() throws {
    let notification = try parseProxyRequest(token: appleExampleToken, headers: appleExampleHeaders,
                                             body: appleExampleBody).get()
    #expect(notification.token == appleExampleToken)
    #expect(notification.topic == "com.example.MyApp")
    #expect(lines(notification.headers) == [
        "apns-id: eabeae54-14a8-11e5-b60b-1697f925ec7b", "apns-expiration: 0", "apns-priority: 10",
        "apns-collapse-id: game1.score.identifier", "apns-push-type: alert",
    ])
    #expect(notification.payload == appleExampleBody)
}

@Test("an uppercase token is lowercased for APNs")
func uppercaseTokenIsLowercased() throws {
    let notification = try parseProxyRequest(token: appleExampleToken.uppercased(), headers: appleExampleHeaders,
                                             body: appleExampleBody).get()
    #expect(notification.token == appleExampleToken)
}

struct Refusal: Sendable, CustomTestStringConvertible {
    var name: String
    var token = appleExampleToken
    var change: [(String, String?)] = []
    var extra: [(String, String)] = []
    var body: [UInt8] = appleExampleBody
    var status: Int
    var reason: String
    var testDescription: String { name }
}

let refusals: [Refusal] = [
    Refusal(name: "no token", token: "", status: 400, reason: "MissingDeviceToken"),
    Refusal(name: "a token that is not hex", token: String(repeating: "z", count: 64), status: 400, reason: "BadDeviceToken"),
    Refusal(name: "a short token", token: "abcd", status: 400, reason: "BadDeviceToken"),
    Refusal(name: "a repeated header", extra: [("apns-priority", "5")], status: 400, reason: "DuplicateHeaders"),
    Refusal(name: "no apns-topic", change: [("apns-topic", nil)], status: 400, reason: "MissingTopic"),
    Refusal(name: "an empty apns-topic", change: [("apns-topic", "")], status: 400, reason: "BadTopic"),
    Refusal(name: "a topic with a space", change: [("apns-topic", "com.example app")], status: 400, reason: "BadTopic"),
    Refusal(name: "priority 7", change: [("apns-priority", "7")], status: 400, reason: "BadPriority"),
    Refusal(name: "a date as expiration", change: [("apns-expiration", "tomorrow")], status: 400, reason: "BadExpirationDate"),
    Refusal(name: "a negative expiration", change: [("apns-expiration", "-1")], status: 400, reason: "BadExpirationDate"),
    Refusal(name: "a 65-byte collapse id", change: [("apns-collapse-id", String(repeating: "c", count: 65))], status: 400,
            reason: "BadCollapseId"),
    Refusal(name: "an apns-id that is not a UUID", change: [("apns-id", "12345")], status: 400, reason: "BadMessageId"),
    Refusal(name: "an unknown push type", change: [("apns-push-type", "loud")], status: 400, reason: "InvalidPushType"),
    Refusal(name: "an empty body", body: [], status: 400, reason: "PayloadEmpty"),
    Refusal(name: "a body of 4097 bytes",
            body: Array((#"{"aps":{"alert":""# + String(repeating: "x", count: 4097 - 20) + #""}}"#).utf8),
            status: 413, reason: "PayloadTooLarge"),
    Refusal(name: "a body that is not JSON", body: Array("hello".utf8), status: 400, reason: "BadPayload"),
    Refusal(name: "a body that is a JSON array", body: Array("[1]".utf8), status: 400, reason: "BadPayload"),
]

@Test("each refusal is APNs' status and reason, answered as APNs writes it", arguments: refusals)
func refusalIsAPNsAnswer(_ refusal: Refusal) throws {
    var pairs: [(String, String)] = []
    for field in appleExampleHeaders.fields {
        if let change = refusal.change.first(where: { $0.0 == field.name }) {
            if let value = change.1 { pairs.append((field.name, value)) }
        } else {
            pairs.append((field.name, field.value))
        }
    }
    pairs += refusal.extra
    let result = parseProxyRequest(token: refusal.token, headers: HTTPHeaders(pairs), body: refusal.body)
    guard case .failure(let refused) = result else {
        Issue.record("accepted")
        return
    }
    #expect(refused.status == refusal.status && refused.reason.rawValue == refusal.reason)
    let answer = proxyAnswer(for: refused, apnsID: "ID-1")
    #expect(answer.status == refusal.status)
    #expect(lines(answer.headers) == ["apns-id: ID-1"])
    #expect(text(answer.body) == #"{"reason":""# + refusal.reason + #""}"#)
}

@Test("a VoIP body may be 5120 bytes, as Apple allows")
func voipBodyMayBeLarger() throws {
    var pairs = appleExampleHeaders.fields.map { ($0.name, $0.name == "apns-push-type" ? "voip" : $0.value) }
    pairs.removeAll { $0.0 == "apns-collapse-id" }
    let body = Array((#"{"aps":{},"x":""# + String(repeating: "x", count: 5120 - 17) + #""}"#).utf8)
    #expect(body.count == 5120)
    #expect((try? parseProxyRequest(token: appleExampleToken, headers: HTTPHeaders(pairs), body: body).get()) != nil)
}

struct OutcomeAnswer: Sendable, CustomTestStringConvertible {
    var outcome: DeliveryOutcome
    var status: Int
    var headers: [String]
    var body: String
    var testDescription: String { "\(outcome)" }
}

let outcomeAnswers: [OutcomeAnswer] = [
    OutcomeAnswer(outcome: .apns(status: 200, reason: nil, apnsID: "APNS-ID"), status: 200, headers: ["apns-id: APNS-ID"], body: ""),
    OutcomeAnswer(outcome: .apns(status: 200, reason: nil, apnsID: nil), status: 200, headers: ["apns-id: SENT-ID"], body: ""),
    OutcomeAnswer(outcome: .apns(status: 400, reason: .badDeviceToken, apnsID: "A"), status: 400, headers: ["apns-id: A"],
                  body: #"{"reason":"BadDeviceToken"}"#),
    OutcomeAnswer(outcome: .apns(status: 410, reason: .unregistered, apnsID: "A"), status: 410, headers: ["apns-id: A"],
                  body: #"{"reason":"Unregistered","timestamp":1454402113000}"#),
    OutcomeAnswer(outcome: .apns(status: 429, reason: .tooManyRequests, apnsID: "A"), status: 429, headers: ["apns-id: A"],
                  body: #"{"reason":"TooManyRequests"}"#),
    OutcomeAnswer(outcome: .answerTimedOut, status: 503, headers: ["apns-id: SENT-ID", "retry-after: 10"],
                  body: #"{"reason":"ServiceUnavailable"}"#),
    OutcomeAnswer(outcome: .connectFailed("refused"), status: 503, headers: ["apns-id: SENT-ID", "retry-after: 10"],
                  body: #"{"reason":"ServiceUnavailable"}"#),
    OutcomeAnswer(outcome: .allConnectionsDown, status: 503, headers: ["apns-id: SENT-ID", "retry-after: 5"],
                  body: #"{"reason":"ServiceUnavailable"}"#),
    OutcomeAnswer(outcome: .overloaded, status: 503, headers: ["apns-id: SENT-ID", "retry-after: 1"],
                  body: #"{"reason":"ServiceUnavailable"}"#),
]

@Test("a delivery outcome is answered as APNs answers, or 503 ServiceUnavailable with Retry-After", arguments: outcomeAnswers)
func outcomeIsAnsweredAsAPNs(_ expected: OutcomeAnswer) {
    let answer = proxyAnswer(for: expected.outcome, apnsID: "SENT-ID", timestamp: 1_454_402_113_000)
    #expect(answer.status == expected.status)
    #expect(lines(answer.headers) == expected.headers)
    #expect(text(answer.body) == expected.body)
}

@Test("APNs' apns-unique-id is passed back unchanged after apns-id, on an acceptance and a refusal; never on the relay's own 503",
      arguments: [
          (DeliveryOutcome.apns(status: 200, reason: nil, apnsID: "A"), ["apns-id: A", "apns-unique-id: u-1"]),
          (.apns(status: 410, reason: .unregistered, apnsID: "A"), ["apns-id: A", "apns-unique-id: u-1"]),
          (.apns(status: 400, reason: .badDeviceToken, apnsID: nil), ["apns-id: SENT-ID", "apns-unique-id: u-1"]),
          (.answerTimedOut, ["apns-id: SENT-ID", "retry-after: 10"]),
      ])
func uniqueIDIsPassedBack(_ outcome: DeliveryOutcome, _ headers: [String]) {
    let answer = proxyAnswer(for: outcome, apnsID: "SENT-ID", uniqueID: "u-1", timestamp: 1_454_402_113_000)
    #expect(lines(answer.headers) == headers)
    #expect(lines(proxyAnswer(for: outcome, apnsID: "SENT-ID").headers).allSatisfy { !$0.hasPrefix("apns-unique-id") })
}

@Test("APNs' retry-after is passed on with its refusal, and a 200 carries none")
func retryAfterIsPassedOn() {
    let refused = proxyAnswer(for: .apns(status: 503, reason: .serviceUnavailable, apnsID: "A"), apnsID: "SENT-ID",
                              retryAfterSeconds: 30)
    #expect(lines(refused.headers) == ["apns-id: A", "retry-after: 30"])
    let accepted = proxyAnswer(for: .apns(status: 200, reason: nil, apnsID: "A"), apnsID: "SENT-ID",
                               retryAfterSeconds: 30)
    #expect(lines(accepted.headers) == ["apns-id: A"])
}
