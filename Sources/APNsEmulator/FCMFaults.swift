/// What the emulator does with one valid FCM message instead of taking it.
public enum FCMEmulatorAction: Sendable, Hashable {
    /// Answers with FCM's error body (and `retry-after` when it has one).
    case reject(FCMRejection)
    /// 401 UNAUTHENTICATED the first time a token is sent, then as usual:
    /// the access token looks rejected once, so a client fetches a new one
    /// and sends again.
    case unauthenticatedOnce
    /// Never answers: the client's timeout must fire.
    case noAnswer
}

/// Fault injection through the registration token, as `APNsFaultToken`
/// does through the device token: a token that starts with the marker
/// `fa11fa11` and a two-digit hex code (the rest free, any FCM token
/// characters) gets the outcome below instead of 200. An unknown code is an
/// ordinary token. Faults apply only to messages that pass validation.
///
/// | token prefix | outcome                                                 |
/// |--------------|---------------------------------------------------------|
/// | `fa11fa1101` | 404 UNREGISTERED                                        |
/// | `fa11fa1102` | 403 SENDER_ID_MISMATCH                                  |
/// | `fa11fa1103` | 400 INVALID_ARGUMENT naming `message.token`             |
/// | `fa11fa1104` | 400 INVALID_ARGUMENT naming `message.android.ttl`       |
/// | `fa11fa1105` | 429 QUOTA_EXCEEDED, `retry-after: 30`                   |
/// | `fa11fa1106` | 500 INTERNAL                                            |
/// | `fa11fa1107` | 503 UNAVAILABLE                                         |
/// | `fa11fa1108` | 401 THIRD_PARTY_AUTH_ERROR                              |
/// | `fa11fa1109` | 401 UNAUTHENTICATED the first time, then accepted       |
/// | `fa11fa110a` | no answer (the client's timeout must fire)              |
/// | `fa11fa110b` | 429 QUOTA_EXCEEDED without `retry-after`                |
/// | `fa11fa110c` | 503 UNAVAILABLE, `retry-after: 7`                       |
/// | `fa11fa110d` | 403 PERMISSION_DENIED (no FcmError)                     |
public enum FCMFaultToken {
    public static let marker = APNsFaultToken.marker

    /// Every fault code with its action, in table order.
    public static let table: [(code: UInt8, action: FCMEmulatorAction)] = [
        (0x01, .reject(FCMRejection(status: 404, rpcStatus: "NOT_FOUND", message: "Requested entity was not found.",
                                    errorCode: "UNREGISTERED"))),
        (0x02, .reject(FCMRejection(status: 403, rpcStatus: "PERMISSION_DENIED", message: "SenderId mismatch",
                                    errorCode: "SENDER_ID_MISMATCH"))),
        (0x03, .reject(.invalidToken)),
        (0x04, .reject(.invalidArgument(
            field: "message.android.ttl",
            "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)"))),
        (0x05, .reject(quotaExceeded(retryAfter: 30))),
        (0x06, .reject(FCMRejection(status: 500, rpcStatus: "INTERNAL", message: "Internal error encountered.",
                                    errorCode: "INTERNAL"))),
        (0x07, .reject(unavailable(retryAfter: nil))),
        (0x08, .reject(FCMRejection(status: 401, rpcStatus: "UNAUTHENTICATED",
                                    message: "Auth error from APNS or Web Push Service",
                                    errorCode: "THIRD_PARTY_AUTH_ERROR"))),
        (0x09, .unauthenticatedOnce),
        (0x0a, .noAnswer),
        (0x0b, .reject(quotaExceeded(retryAfter: nil))),
        (0x0c, .reject(unavailable(retryAfter: 7))),
        (0x0d, .reject(FCMRejection(status: 403, rpcStatus: "PERMISSION_DENIED",
                                    message: "The caller does not have permission", errorCode: nil))),
    ]

    private static func quotaExceeded(retryAfter: Int?) -> FCMRejection {
        FCMRejection(status: 429, rpcStatus: "RESOURCE_EXHAUSTED",
                     message: "Quota exceeded for quota metric 'Send requests' of service 'fcm.googleapis.com'.",
                     errorCode: "QUOTA_EXCEEDED", retryAfter: retryAfter)
    }

    private static func unavailable(retryAfter: Int?) -> FCMRejection {
        FCMRejection(status: 503, rpcStatus: "UNAVAILABLE", message: "The service is currently unavailable.",
                     errorCode: "UNAVAILABLE", retryAfter: retryAfter)
    }

    /// The action for `code`, nil when the code is not in the table.
    public static func action(forCode code: UInt8) -> FCMEmulatorAction? {
        table.first { $0.code == code }?.action
    }

    /// The action a token selects, nil for an ordinary token.
    public static func action(forToken token: Substring.UTF8View) -> FCMEmulatorAction? {
        APNsFaultToken.code(forToken: token).flatMap(action(forCode:))
    }

    /// A token that triggers `code`, shaped as an FCM SDK's
    /// (`<instance id>:APA91b…`); `filler` distinguishes several tokens for
    /// the same fault.
    public static func token(code: UInt8, filler: UInt32 = 0) -> String {
        String(APNsFaultToken.token(code: code, filler: filler).prefix(22)) + ":APA91b" + String(filler, radix: 16)
            + String(repeating: "x", count: 130)
    }
}
