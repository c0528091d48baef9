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

@Test("an entry for a failure before APNs carries the notification's fields and no APNs answer")
func entryBeforeAPNs() throws {
    let notification = try decodeOne(#""message":"m","notif_id":"x""#)
    #expect(FailedPushLog(notification: notification, token: tokenA, app: "toot", failure: "no app toot")
        == FailedPushLog(notificationID: "x", token: tokenA, message: "m", error: "no app toot", app: "toot"))
}

@Test("the error answer is gorush's {code, message}")
func errorJSONIsGorushs() {
    #expect(text(encodeGorushError(message: "Missing notifications field."))
        == #"{"code":400,"message":"Missing notifications field."}"#)
    #expect(text(encodeGorushError(message: #"a "quoted" name"#)) == #"{"code":400,"message":"a \"quoted\" name"}"#)
}
