// The reasons APNs gives for refusing a notification (WIRE.md §3
// maps each to the relay's answer).

/// The `reason` of an APNs error response, per Apple's "Handling notification
/// responses from APNs" table.
public enum APNsReason: Sendable, Equatable, Hashable {
    // 400
    case badCollapseId, badDeviceToken, badExpirationDate, badMessageId, badPriority, badTopic
    case deviceTokenNotForTopic, duplicateHeaders, idleTimeout, invalidPushType, missingDeviceToken
    case missingTopic, payloadEmpty, topicDisallowed
    // 403
    case badCertificate, badCertificateEnvironment, expiredProviderToken, forbidden, invalidProviderToken
    case missingProviderToken, unrelatedKeyIdInToken, badEnvironmentKeyIdInToken
    /// A provider token whose key Apple scoped to the other environment.
    /// Apple's table spells it `BadEnvironmentKeyIdInToken`, but APNs sends
    /// `BadEnvironmentKeyInToken` (APNSwift added it for that reason, its
    /// PR #229, October 2025). Both are kept, so either string is known.
    case badEnvironmentKeyInToken
    // 404, 405
    case badPath, methodNotAllowed
    // 410
    case expiredToken, unregistered
    // 413
    case payloadTooLarge
    // 429
    case tooManyProviderTokenUpdates, tooManyRequests
    // 500, 503
    case internalServerError, serviceUnavailable, shutdown
    /// A reason Apple added after this table, kept verbatim.
    case unknown(String)

    /// Every reason Apple documents, in table order, and then the one APNs
    /// is known to send under another name (`badEnvironmentKeyInToken`).
    public static let documented: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
        .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken,
        .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
        .badEnvironmentKeyInToken,
    ]

    public init(rawValue: String) {
        switch rawValue {
        case "BadCollapseId": self = .badCollapseId
        case "BadDeviceToken": self = .badDeviceToken
        case "BadExpirationDate": self = .badExpirationDate
        case "BadMessageId": self = .badMessageId
        case "BadPriority": self = .badPriority
        case "BadTopic": self = .badTopic
        case "DeviceTokenNotForTopic": self = .deviceTokenNotForTopic
        case "DuplicateHeaders": self = .duplicateHeaders
        case "IdleTimeout": self = .idleTimeout
        case "InvalidPushType": self = .invalidPushType
        case "MissingDeviceToken": self = .missingDeviceToken
        case "MissingTopic": self = .missingTopic
        case "PayloadEmpty": self = .payloadEmpty
        case "TopicDisallowed": self = .topicDisallowed
        case "BadCertificate": self = .badCertificate
        case "BadCertificateEnvironment": self = .badCertificateEnvironment
        case "ExpiredProviderToken": self = .expiredProviderToken
        case "Forbidden": self = .forbidden
        case "InvalidProviderToken": self = .invalidProviderToken
        case "MissingProviderToken": self = .missingProviderToken
        case "UnrelatedKeyIdInToken": self = .unrelatedKeyIdInToken
        case "BadEnvironmentKeyIdInToken": self = .badEnvironmentKeyIdInToken
        case "BadEnvironmentKeyInToken": self = .badEnvironmentKeyInToken
        case "BadPath": self = .badPath
        case "MethodNotAllowed": self = .methodNotAllowed
        case "ExpiredToken": self = .expiredToken
        case "Unregistered": self = .unregistered
        case "PayloadTooLarge": self = .payloadTooLarge
        case "TooManyProviderTokenUpdates": self = .tooManyProviderTokenUpdates
        case "TooManyRequests": self = .tooManyRequests
        case "InternalServerError": self = .internalServerError
        case "ServiceUnavailable": self = .serviceUnavailable
        case "Shutdown": self = .shutdown
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIdInToken: "BadEnvironmentKeyIdInToken"
        case .badEnvironmentKeyInToken: "BadEnvironmentKeyInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let raw): raw
        }
    }

    /// The HTTP status Apple documents for this reason (nil for `unknown`).
    public var documentedStatus: Int? {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
             .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
             .missingTopic, .payloadEmpty, .topicDisallowed:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
             .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        case .unknown: nil
        }
    }
}
