/// The push service a notification went through: the `service` label of
/// the notification series and the `service=` word of the delivery log
/// lines (external: the values must not change).
public enum PushServiceName: String, CaseIterable, Sendable {
    case apns
    case fcm
}
