// What FCM HTTP v1 takes in a message, from its reference: the data
// payload's size (ErrorCode INVALID_ARGUMENT, "Message too big": "4096
// bytes for most messages … This includes both the keys and the values")
// and AndroidConfig.ttl's range (at most four weeks).

public enum FCMMessageLimits {
    /// The data payload's keys and values together, in bytes (UTF-8, as
    /// sent, not as JSON escapes them).
    public static let maxDataBytes = 4_096
    /// AndroidConfig.ttl's longest: four weeks; a longer one is refused.
    public static let maxTTLSeconds = 2_419_200
}
