import Testing
@testable import APNsCore

@Suite("APNs responses")
struct APNsResponseTests {
    @Test("error bodies yield reason and timestamp", arguments: [
        (#"{"reason":"BadDeviceToken"}"#, "BadDeviceToken", nil),
        (#"{"reason":"Unregistered","timestamp":1700000000123}"#, "Unregistered", 1_700_000_000_123),
        (#" { "timestamp" : 12 , "reason" : "ExpiredToken" } "#, "ExpiredToken", 12),
        (#"{"extra":{"a":[1,"}"]},"reason":"Bad\"Quote\u0041"}"#, "Bad\"QuoteA", nil),
        (#"{"reason":true}"#, nil, nil),
        ("", nil, nil),
        ("not json", nil, nil),
        (#"{"reason":"Unterminated"#, nil, nil),
        (#"{"reason":"Shutdown" "timestamp":5}"#, "Shutdown", nil),
    ] as [(String, String?, Int64?)])
    func parsesBodies(body: String, reason: String?, timestamp: Int64?) {
        let parsed = parseAPNsErrorBody(Array(body.utf8))
        #expect(parsed.reason == reason)
        #expect(parsed.timestamp == timestamp)
    }

    @Test("every documented reason surfaces as its enum value with its status", arguments: APNsReason.documented)
    func everyReason(reason: APNsReason) throws {
        let status = try #require(reason.documentedStatus)
        let body = Array(#"{"reason":""#.utf8) + Array(reason.rawValue.utf8) + Array(#"","timestamp":42}"#.utf8)
        let delivery = APNsDelivery(status: status, apnsID: "ID", body: body)
        #expect(delivery.outcome == .apns(status: status, reason: reason, apnsID: "ID"))
        #expect(delivery.unregisteredTimestamp == (status == 410 ? 42 : nil))
    }

    @Test("200 has no reason even with a body; an unknown reason is kept verbatim")
    func successAndUnknown() {
        #expect(APNsDelivery(status: 200, apnsID: "A", body: []).outcome == .apns(status: 200, reason: nil, apnsID: "A"))
        #expect(APNsDelivery(status: 400, apnsID: nil, body: Array(#"{"reason":"NewThing"}"#.utf8)).outcome
            == .apns(status: 400, reason: .unknown("NewThing"), apnsID: nil))
        #expect(APNsDelivery(status: 502, apnsID: nil, body: Array("<html>bad gateway</html>".utf8)).outcome
            == .apns(status: 502, reason: nil, apnsID: nil))
    }

    @Test("Retry-After is delay-seconds within an hour; a date, a sign, a fraction or nothing is no value", arguments: [
        ("0", 0), ("7", 7), (" 120 ", 120), ("\t30", 30), ("3600", 3_600), ("3601", 3_600),
        ("99999999999999999999999999", 3_600),
        ("", nil), ("  ", nil), ("-5", nil), ("+5", nil), ("1.5", nil), ("5s", nil), ("1 2", nil),
        ("Wed, 21 Oct 2015 07:28:00 GMT", nil), ("\u{0}", nil),
    ] as [(String, Int?)])
    func retryAfterValues(value: String, seconds: Int?) {
        #expect(APNsDelivery.retryAfterSeconds(value[...].utf8) == seconds)
    }

    @Test("an error answer keeps its Retry-After; a 200 and a final 410 have none")
    func retryAfterOnDelivery() {
        let body = Array(#"{"reason":"ServiceUnavailable"}"#.utf8)
        #expect(APNsDelivery(status: 503, apnsID: nil, body: body, retryAfterSeconds: 9).retryAfterSeconds == 9)
        #expect(APNsDelivery(status: 200, apnsID: "A", body: [], retryAfterSeconds: 9).retryAfterSeconds == nil)
        let gone = APNsDelivery(status: 410, apnsID: nil, body: Array(#"{"reason":"Unregistered","timestamp":5}"#.utf8),
                                retryAfterSeconds: 9)
        #expect(gone.retryAfterSeconds == nil && gone.unregisteredTimestamp == 5)
    }

    @Test("the timestamp and the Retry-After share one stored value without mixing", arguments: [
        (Int64?.some(0), Int?.none, Int64?.some(0), Int?.none),
        (1_454_402_113_000, nil, 1_454_402_113_000, nil),
        (Int64.max, nil, Int64.max, nil),
        (-5, nil, nil, nil),
        (nil, 0, nil, 0),
        (nil, 3_600, nil, 3_600),
        (nil, -7, nil, 0),
        (nil, nil, nil, nil),
    ] as [(Int64?, Int?, Int64?, Int?)])
    func sharedDetail(timestamp: Int64?, retryAfter: Int?, expectedTimestamp: Int64?, expectedRetryAfter: Int?) {
        var delivery = APNsDelivery(outcome: .answerTimedOut, unregisteredTimestamp: timestamp,
                                    retryAfterSeconds: retryAfter)
        #expect(delivery.unregisteredTimestamp == expectedTimestamp)
        #expect(delivery.retryAfterSeconds == expectedRetryAfter)
        // Setting one replaces the other.
        delivery.retryAfterSeconds = 30
        #expect(delivery.retryAfterSeconds == 30 && delivery.unregisteredTimestamp == nil)
        delivery.unregisteredTimestamp = 42
        #expect(delivery.unregisteredTimestamp == 42 && delivery.retryAfterSeconds == nil)
    }
}
