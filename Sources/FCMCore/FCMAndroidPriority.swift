// AndroidConfig.priority (AndroidMessagePriority): `normal` lets Android
// hold the message while the device saves power, `high` wakes it.

public enum FCMAndroidPriority: String, Sendable, Equatable, CaseIterable {
    case normal
    case high
}
