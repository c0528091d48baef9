// Why FCM refused a message: the `errorCode` of the answer's FcmError
// detail (FCM HTTP v1's ErrorCode enum), else the google.rpc.Code name of
// `error.status` for the answers that carry no FcmError (a rejected access
// token, a missing permission, an unknown project).

/// An FCM error code, or a google.rpc status name; unknown text is kept.
public enum FCMReason: Sendable, Equatable, Hashable, CustomStringConvertible {
    // FCM's ErrorCode.
    case unspecifiedError
    case invalidArgument
    case unregistered
    case senderIDMismatch
    case quotaExceeded
    case unavailable
    case internalError
    case thirdPartyAuthError
    // google.rpc.Code names FCM answers with and no FcmError.
    case unauthenticated
    case permissionDenied
    case notFound
    case resourceExhausted
    /// Anything else, as sent (or `HTTP <status>` for a body without one).
    case other(String)

    private static let known: [(FCMReason, String)] = [
        (.unspecifiedError, "UNSPECIFIED_ERROR"), (.invalidArgument, "INVALID_ARGUMENT"),
        (.unregistered, "UNREGISTERED"), (.senderIDMismatch, "SENDER_ID_MISMATCH"),
        (.quotaExceeded, "QUOTA_EXCEEDED"), (.unavailable, "UNAVAILABLE"), (.internalError, "INTERNAL"),
        (.thirdPartyAuthError, "THIRD_PARTY_AUTH_ERROR"), (.unauthenticated, "UNAUTHENTICATED"),
        (.permissionDenied, "PERMISSION_DENIED"), (.notFound, "NOT_FOUND"), (.resourceExhausted, "RESOURCE_EXHAUSTED"),
    ]

    /// Every reason with a name of its own (none of `.other`), in FCM's
    /// order: the metrics' label values.
    public static let named: [FCMReason] = known.map(\.0)

    public init(_ text: String) {
        self = Self.known.first { $0.1 == text }?.0 ?? .other(text)
    }

    /// The reason an answer without a JSON error body stands for: the
    /// google.rpc.Code of its HTTP status (google/rpc/code.proto's mapping).
    public init(httpStatus status: Int) {
        switch status {
        case 400: self = .invalidArgument
        case 401: self = .unauthenticated
        case 403: self = .permissionDenied
        case 404: self = .notFound
        case 429: self = .resourceExhausted
        case 500: self = .internalError
        case 503: self = .unavailable
        default: self = .other("HTTP \(status)")
        }
    }

    /// The name FCM uses.
    public var text: String {
        if case .other(let text) = self { return text }
        return Self.known.first { $0.0 == self }?.1 ?? ""
    }

    public var description: String { text }
}
