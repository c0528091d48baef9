// gorush's answers, byte for byte: the response, a failed-push entry with
// and without our extensions, the error JSON.

@testable import ProviderAPI
import RelayCore
import Testing

@Test("an answer without failures is gorush's success JSON")
func successResponseIsGorushs() {
    #expect(text(encodeGorushResponse(counts: 60, logs: [])) == #"{"counts":60,"logs":[],"success":"ok"}"#)
}

@Test("a failed-push entry has gorush's fields in gorush's order, and ours only when present")
func failedPushEntryJSON() {
    let plain = FailedPushLog(token: "t", message: "Hello World iOS!", error: "BadDeviceToken")
    #expect(text(plain.json) == #"{"type":"failed-push","platform":"ios","token":"t","message":"Hello World iOS!","error":"BadDeviceToken"}"#)
    let full = FailedPushLog(notificationID: "n-1", token: "t", message: "m\n\"q\"", error: "Unregistered", status: 410,
                             reason: "Unregistered", apnsID: "A-B", app: "toot", timestamp: 1_700_000_000_123)
    #expect(text(full.json) == #"{"notif_id":"n-1","type":"failed-push","platform":"ios","token":"t","message":"m\n\"q\"","error":"Unregistered","status":410,"reason":"Unregistered","apns_id":"A-B","app":"toot","timestamp":1700000000123}"#)
    #expect(text(encodeGorushResponse(counts: 2, logs: [plain, plain]))
        == #"{"counts":2,"logs":["# + text(plain.json) + "," + text(plain.json) + #"],"success":"ok"}"#)
}

@Test("an entry for APNs' answer carries the reason as gorush's error, and the timestamp only for 410")
func entryFromAPNsAnswer() throws {
    let notification = try decodeOne(#""message":"m","notif_id":"x""#)
    let gone = FailedPushLog(notification: notification, token: tokenA, app: "toot", status: 410, reason: .unregistered,
                             apnsID: "ID", timestamp: 5, failure: "unused")
    #expect(gone == FailedPushLog(notificationID: "x", token: tokenA, message: "m", error: "Unregistered", status: 410,
                                  reason: "Unregistered", apnsID: "ID", app: "toot", timestamp: 5))
    let bad = FailedPushLog(notification: notification, token: tokenA, app: nil, status: 400, reason: .badDeviceToken,
                            apnsID: nil, timestamp: 5, failure: "unused")
    #expect(bad.timestamp == nil && bad.error == "BadDeviceToken")
    let timeout = FailedPushLog(notification: notification, token: tokenA, app: nil, status: nil, reason: nil,
                                apnsID: nil, timestamp: nil, failure: "APNs did not answer in time")
    #expect(timeout.error == "APNs did not answer in time" && timeout.status == nil && timeout.reason == nil)
}

@Test("the error answer is gorush's {code, message}")
func errorJSONIsGorushs() {
    #expect(text(encodeGorushError(message: "Missing notifications field."))
        == #"{"code":400,"message":"Missing notifications field."}"#)
    #expect(text(encodeGorushError(message: #"a "quoted" name"#)) == #"{"code":400,"message":"a \"quoted\" name"}"#)
}
