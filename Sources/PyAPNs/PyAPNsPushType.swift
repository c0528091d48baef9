import HTTPCore
import XMLRPC

/// pyapns sent whatever dictionary it got to APNs' legacy binary interface,
/// which had no push type; APNs' HTTP/2 interface wants one
/// (`apns-push-type`), and `background` only with priority 5.
public enum PyAPNsPushType: Sendable, Equatable {
    case alert
    case background

    /// The notification's `apns-push-type` and, for `background`, the
    /// `apns-priority` Apple requires for it (without `apns-topic`).
    public var headers: [HTTPField] {
        switch self {
        case .alert:
            [HTTPField(name: "apns-push-type", value: "alert")]
        case .background:
            [HTTPField(name: "apns-push-type", value: "background"), HTTPField(name: "apns-priority", value: "5")]
        }
    }
}

/// `background` when the notification's `aps` asks for no alert, badge or
/// sound (a silent `content-available` push), else `alert`; a notification
/// without `aps` is `alert`. Read from the call's own struct, as its JSON
/// payload is written from it.
public func pyAPNsPushType(of notification: XMLRPCValue) -> PyAPNsPushType {
    guard case .structure(let members) = notification,
          let aps = members.first(where: { $0.name == "aps" })?.value
    else { return .alert }
    guard case .structure(let apsMembers) = aps else { return .background }
    let asksForAttention = apsMembers.contains { $0.name == "alert" || $0.name == "badge" || $0.name == "sound" }
    return asksForAttention ? .alert : .background
}
