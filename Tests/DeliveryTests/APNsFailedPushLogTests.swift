// The one mapping of a delivery's end to its failed-push log
// (`APNsPush.failedPushLog(for:…)`): each outcome kind → the log's fields, on a path
// without a gorush notification (the proxy, pyapns, Web Push) and with one.

import APNsCore
import Delivery
import RelayCore
import Testing

private let tokenA = String(repeating: "a1", count: 32)

/// (what, the delivery, the log's error, status, reason, apns_id,
/// timestamp). `apns_id`: APNs' answer's, else the one the relay sent
/// ("SENT" in every row).
let failedDeliveryCases: [(String, APNsDelivery, String, Int?, String?, String?, Int64?)] = [
    ("410 with a reason keeps APNs' timestamp",
     APNsDelivery(outcome: .apns(status: 410, reason: .unregistered, apnsID: "ANSWER"), unregisteredTimestamp: 7),
     "Unregistered", 410, "Unregistered", "ANSWER", 7),
    ("410 without APNs' apns-id takes the one sent",
     APNsDelivery(outcome: .apns(status: 410, reason: .expiredToken, apnsID: nil), unregisteredTimestamp: 7),
     "ExpiredToken", 410, "ExpiredToken", "SENT", 7),
    ("400 drops a timestamp (only 410's is APNs' word on the token)",
     APNsDelivery(outcome: .apns(status: 400, reason: .badDeviceToken, apnsID: "ANSWER"), unregisteredTimestamp: 7),
     "BadDeviceToken", 400, "BadDeviceToken", "ANSWER", nil),
    ("403 is the credential's refusal",
     APNsDelivery(outcome: .apns(status: 403, reason: .invalidProviderToken, apnsID: "ANSWER")),
     "InvalidProviderToken", 403, "InvalidProviderToken", "ANSWER", nil),
    ("a status without a reason is a sentence",
     APNsDelivery(outcome: .apns(status: 500, reason: nil, apnsID: "ANSWER")),
     "APNs answered 500", 500, nil, "ANSWER", nil),
    ("a timeout has no APNs answer",
     APNsDelivery(outcome: .answerTimedOut), "no answer from APNs in time", nil, nil, "SENT", nil),
    ("a failed connect says why",
     APNsDelivery(outcome: .connectFailed("refused")), "cannot connect to APNs: refused", nil, nil, "SENT", nil),
    ("a failed TLS handshake says why",
     APNsDelivery(outcome: .tlsFailed("bad certificate")), "TLS with APNs failed: bad certificate", nil, nil, "SENT", nil),
    ("a lost stream says why",
     APNsDelivery(outcome: .streamFailed("reset")), "the APNs stream failed: reset", nil, nil, "SENT", nil),
    ("no connection up",
     APNsDelivery(outcome: .allConnectionsDown), "no connection to APNs is up", nil, nil, "SENT", nil),
    ("the relay's own limit",
     APNsDelivery(outcome: .overloaded), "the relay is over MAX_IN_FLIGHT", nil, nil, "SENT", nil),
]

@Test("each way a delivery fails gives its log fields", arguments: failedDeliveryCases)
func failedDeliveryLogFields(_ what: String, _ delivery: APNsDelivery, _ error: String, _ status: Int?,
                             _ reason: String?, _ apnsID: String?, _ timestamp: Int64?) throws {
    let log = try #require(APNsPush.failedPushLog(for: delivery, token: tokenA, app: "toot",
                                                  source: FailedPushSource(sentAPNsID: "SENT")))
    #expect(log == FailedPushLog(token: tokenA, message: "", error: error, status: status, reason: reason,
                                 apnsID: apnsID, app: "toot", timestamp: timestamp), "\(what)")
    #expect(failedPushErrorText(delivery.outcome) == error, "\(what)")
}

@Test("a gorush notification's token carries its id, platform and message, and no invented apns_id")
func failedDeliveryLogOfAGorushNotification() throws {
    let notification = FailedPushSource.Notification(id: "n-7", platform: 1, message: "hello")
    for (what, delivery, error, status, reason, _, timestamp) in failedDeliveryCases {
        let log = try #require(APNsPush.failedPushLog(for: delivery, token: tokenA, app: "toot",
                                                      source: FailedPushSource(notification: notification)))
        let answered: String? = if case .apns(_, _, let id) = delivery.outcome { id } else { nil }
        #expect(log == FailedPushLog(notificationID: "n-7", token: tokenA, message: "hello", error: error,
                                     status: status, reason: reason, apnsID: answered, app: "toot",
                                     timestamp: timestamp), "\(what)")
    }
}

@Test("a delivery APNs accepted has no log, with or without a notification")
func acceptedDeliveryHasNoLog() throws {
    let accepted = APNsDelivery(outcome: .apns(status: 200, reason: nil, apnsID: "ANSWER"))
    #expect(APNsPush.failedPushLog(for: accepted, token: tokenA, app: "toot",
                                   source: FailedPushSource(sentAPNsID: "SENT")) == nil)
    let notification = FailedPushSource.Notification(id: "", platform: 1, message: "hello")
    #expect(APNsPush.failedPushLog(for: accepted, token: tokenA, app: "toot",
                                   source: FailedPushSource(notification: notification)) == nil)
}
