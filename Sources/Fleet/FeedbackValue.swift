import APNsCore
import FCMCore
import Feedback

// One feedback entry as a value of the app's list in Redis
// (`FleetKeys.feedback(app:)`), and back. Text an operator can read with
// `redis-cli LRANGE`, one line of five fields separated by single spaces:
//
//     1 production 1764114000123 Unregistered 0a1b…
//
// the format's version, the environment, the time in unix milliseconds,
// APNs' reason and the device token. The app is the key's. An FCM token's
// entry has `android` where the environment stands (FCM has none), FCM's
// code as its reason (`UNREGISTERED`, `SENDER_ID_MISMATCH`):
//
//     1 android 1764114000123 UNREGISTERED cXyz…:APA91b…
// About 100 bytes
// for a 64-digit token, so a list of FEEDBACK_MAX's largest setting read in
// `FleetFeedback.takeChunk`'s chunks stays far inside `RedisReplyLimits`.
// Not JSON: five fixed fields need no parser, and none of them holds a space.

/// The value stored for `entry`.
public func feedbackValue(_ entry: FeedbackEntry) -> [UInt8] {
    var value: [UInt8] = []
    value.reserveCapacity(40 + entry.reason.utf8.count + entry.token.utf8.count)
    value += Array("1 ".utf8)
    value += Array((entry.platform == .android ? FeedbackPlatform.android.rawValue : entry.environment.rawValue).utf8)
    value.append(UInt8(ascii: " "))
    value += Array(String(entry.time).utf8)
    value.append(UInt8(ascii: " "))
    value += Array(entry.reason.utf8)
    value.append(UInt8(ascii: " "))
    value += Array(entry.token.utf8)
    return value
}

/// Why a value read back is not an entry: words for a log line, never the
/// value's content (it may hold a token).
public enum FeedbackValueError: Error, Equatable, CustomStringConvertible {
    case notFiveFields
    case unknownVersion
    case unknownEnvironment
    case badTime
    case badReason
    case badToken
    case tooLong

    public var description: String {
        switch self {
        case .notFiveFields: "not five fields separated by spaces"
        case .unknownVersion: "not format 1"
        case .unknownEnvironment: "an environment other than production, development or android"
        case .badTime: "a time that is not unix milliseconds"
        case .badReason: "a reason that is not 1 to 64 letters and underscores"
        case .badToken: "a token that is not 1 to \(feedbackValueMaxTokenBytes) visible ASCII characters "
            + "(an FCM token: FCMToken's syntax)"
        case .tooLong: "longer than \(feedbackValueMaxBytes) bytes"
        }
    }
}

/// A token longer than this is no device token (APNs' are 64 hex digits;
/// the proxy and gorush routes take up to 200).
public let feedbackValueMaxTokenBytes = 256
/// A value longer than this is not one the relay wrote (an FCM token may
/// have up to `FCMToken.maxLength` characters).
public let feedbackValueMaxBytes = 128 + FCMToken.maxLength

/// The entry `value` holds for `app`, or why it holds none. Whatever is in
/// Redis may have been written by another program or an attacker: every
/// field is checked, nothing is trusted for its length.
public func decodeFeedbackValue(_ value: [UInt8], app: String) -> Result<FeedbackEntry, FeedbackValueError> {
    guard value.count <= feedbackValueMaxBytes else { return .failure(.tooLong) }
    let fields = value.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
    guard fields.count == 5 else { return .failure(.notFiveFields) }
    guard fields[0].elementsEqual("1".utf8) else { return .failure(.unknownVersion) }
    var environment = APNsEnvironment.production
    var platform = FeedbackPlatform.ios
    if fields[1].elementsEqual("production".utf8) {
        environment = .production
    } else if fields[1].elementsEqual("development".utf8) {
        environment = .development
    } else if fields[1].elementsEqual(FeedbackPlatform.android.rawValue.utf8) {
        platform = .android
    } else {
        return .failure(.unknownEnvironment)
    }
    // Digits only, at most 15 (unix milliseconds until the year 33658):
    // no sign, no overflow.
    let timeField = fields[2]
    guard (1...15).contains(timeField.count), timeField.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
          let time = Int64(String(decoding: timeField, as: UTF8.self))
    else { return .failure(.badTime) }
    let reasonField = fields[3]
    guard (1...64).contains(reasonField.count),
          reasonField.allSatisfy({ (($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A) || $0 == UInt8(ascii: "_") })
    else { return .failure(.badReason) }
    let tokenField = fields[4]
    let tokenIsValid = platform == .android
        ? FCMToken.isValid(tokenField)
        : (1...feedbackValueMaxTokenBytes).contains(tokenField.count) && tokenField.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
    guard tokenIsValid else { return .failure(.badToken) }
    return .success(FeedbackEntry(app: app, environment: environment, platform: platform,
                                  token: String(decoding: tokenField, as: UTF8.self),
                                  reason: String(decoding: reasonField, as: UTF8.self), time: time))
}
