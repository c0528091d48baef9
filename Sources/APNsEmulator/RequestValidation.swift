import APNsCore

/// Why a request was refused: the status and the `reason` Apple would send.
public struct APNsRejection: Error, Sendable, Hashable {
    public var status: Int
    public var reason: APNsReason

    public init(status: Int, reason: APNsReason) {
        self.status = status
        self.reason = reason
    }

    public init(_ reason: APNsReason) {
        self.init(status: reason.documentedStatus ?? 400, reason: reason)
    }

    /// The emulator's reason for a payload that is not a JSON object with an
    /// `aps` key. Apple documents no reason for it; this one is undocumented
    /// on purpose, so a client maps it as "400, any other reason".
    public static let badPayload = APNsRejection(status: 400, reason: .unknown("BadPayload"))

    /// A valid token whose key Apple scoped to the other environment (the
    /// 2025 key options): 403 with the reason APNs sends,
    /// `BadEnvironmentKeyInToken`, not the table's spelling (see
    /// `APNsReason.badEnvironmentKeyInToken`; FCM passes the same string on
    /// from APNs). Not InvalidProviderToken: the token is good, and a client
    /// that renews its token on InvalidProviderToken would renew in vain.
    public static let keyForOtherEnvironment = APNsRejection(.badEnvironmentKeyInToken)
}

/// A 128-bit UUID, the key of the duplicate-apns-id ledger.
struct UUIDKey: Hashable, Sendable {
    var high: UInt64
    var low: UInt64

    /// Parses the canonical 8-4-4-4-12 form, either case (RFC 9562 §4).
    init?(_ text: Substring.UTF8View) {
        guard text.count == 36 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        var offset = 0
        for byte in text {
            defer { offset += 1 }
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard let value = APNsFaultToken.hexValue(byte) else { return nil }
            if digits < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
            digits += 1
        }
        self.high = high
        self.low = low
    }

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Uppercase canonical text, as Apple generates it.
    var text: String {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var bytes = [UInt8]()
        bytes.reserveCapacity(36)
        for index in 0..<32 {
            if index == 8 || index == 12 || index == 16 || index == 20 { bytes.append(UInt8(ascii: "-")) }
            let word = index < 16 ? high : low
            let shift = UInt64(60 - (index % 16) * 4)
            bytes.append(digits[Int((word >> shift) & 0xf)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A random version-4 UUID.
    static func random<Generator: RandomNumberGenerator>(using generator: inout Generator) -> UUIDKey {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return UUIDKey(high: (high & ~0xf000) | 0x4000, low: (low & ~(0xc << 60)) | (0x8 << 60))
    }
}

/// How the client authenticated on this connection.
enum ClientCredential {
    /// TLS client certificate with this subject UID (nil: none in the certificate).
    case certificate(uid: String?)
    /// Provider tokens checked by this verifier.
    case token(EmulatorTokenVerifier)
    /// Nothing to check.
    case none
    /// Certificates are required and the connection has none (the
    /// listener only requested one, as it serves FCM too).
    case absent
}

/// A request that passed every APNs rule.
struct ValidatedNotification {
    var token: Substring
    /// The client's apns-id, when it sent one.
    var apnsID: String?
    var apnsIDKey: UUIDKey?
    /// The topic in force (for certificates, the certificate's when absent).
    var topic: String?
    var pushType: String?
    var priority: Int?
    var expiration: Int?
    var collapseID: String?
    /// Client certificate UID or provider token `iss`.
    var authenticatedAs: String?
    /// The provider token's `kid` (token authentication only).
    var providerKeyID: String?
    /// The provider token's key and `iat` (token authentication only).
    var providerKey: EmulatorTokenKey?
    var providerTokenIssuedAt: Int?
}

/// The rules of Apple's "Sending notification requests to APNs", applied to
/// one complete request. Pure: no I/O, no clock (the caller passes `now`).
enum APNsRequestValidator {
    /// 4 KB, 5 KB for VoIP (Apple: "Generating a remote notification").
    static let maximumPayloadSize = 4096
    static let maximumVoIPPayloadSize = 5120
    static let maximumCollapseIDSize = 64
    static let pathPrefix = "/3/device/"

    /// `boundKey`: the key of the first token this connection accepted
    /// (nil before it accepted one). APNs binds a connection to it: a token
    /// of another key is 403 UnrelatedKeyIdInToken ("The key ID in the
    /// provider token isn't related to the key ID of the token used in the
    /// first push of this connection. To use this token, open a new
    /// connection.").
    static func validate(method: String, path: String, headers: [(name: String, value: String)],
                         body: [UInt8], credential: ClientCredential, expectedTopic: String?,
                         boundKey: EmulatorTokenKey? = nil,
                         now: Int) -> Result<ValidatedNotification, APNsRejection> {
        guard method == "POST" else { return .failure(APNsRejection(.methodNotAllowed)) }
        guard path.hasPrefix(pathPrefix) else { return .failure(APNsRejection(.badPath)) }
        let token = path.dropFirst(pathPrefix.utf8.count)
        guard !token.isEmpty else { return .failure(APNsRejection(.missingDeviceToken)) }
        guard isDeviceToken(token.utf8) else { return .failure(APNsRejection(.badDeviceToken)) }

        var notification = ValidatedNotification(token: token)
        var authorization: String?
        var seen: UInt8 = 0
        for header in headers {
            let bit: UInt8
            switch header.name {
            case "apns-id": bit = 1 << 0; notification.apnsID = header.value
            case "apns-topic": bit = 1 << 1; notification.topic = header.value
            case "apns-push-type": bit = 1 << 2; notification.pushType = header.value
            case "apns-priority": bit = 1 << 3
                guard let priority = parsePriority(header.value) else { return .failure(APNsRejection(.badPriority)) }
                notification.priority = priority
            case "apns-expiration": bit = 1 << 4
                guard let expiration = parseExpiration(header.value) else {
                    return .failure(APNsRejection(.badExpirationDate))
                }
                notification.expiration = expiration
            case "apns-collapse-id": bit = 1 << 5; notification.collapseID = header.value
            case "authorization": bit = 1 << 6; authorization = header.value
            default: continue
            }
            guard seen & bit == 0 else { return .failure(APNsRejection(.duplicateHeaders)) }
            seen |= bit
        }

        switch credential {
        case .certificate(let uid):
            // An `authorization` header changes nothing here: "When the
            // provider certificate is used to establish a connection, this
            // request header is ignored" (Apple, Local and Remote
            // Notification Programming Guide, table 8-2, APNs request headers).
            notification.authenticatedAs = uid
            if let topic = notification.topic {
                if let uid, !certificateAllows(topic: topic, uid: uid) {
                    return .failure(APNsRejection(topic.isEmpty ? .badTopic : .topicDisallowed))
                }
            } else if let uid {
                notification.topic = uid
            } else {
                return .failure(APNsRejection(.missingTopic))
            }
        case .token(let verifier):
            guard let authorization else { return .failure(APNsRejection(.missingProviderToken)) }
            let key: EmulatorTokenKey
            switch verifier.verify(authorization: authorization, now: now) {
            case .success(let verified):
                key = verified.key
                notification.providerTokenIssuedAt = verified.issuedAt
            case .failure(let refusal):
                return .failure(APNsRejection(refusal.reason))
            }
            if let boundKey, boundKey !== key { return .failure(APNsRejection(.unrelatedKeyIdInToken)) }
            notification.authenticatedAs = key.teamID
            notification.providerKeyID = key.keyID
            notification.providerKey = key
            guard let topic = notification.topic else { return .failure(APNsRejection(.missingTopic)) }
            // A topic-specific key used for another topic: Apple's table has
            // 400 TopicDisallowed for a topic the sender may not push to; the
            // token itself is valid, so not a 403.
            guard key.covers(topic: topic) else { return .failure(APNsRejection(.topicDisallowed)) }
        case .none:
            break
        case .absent:
            // Apple: "No provider certificate was used to connect to APNs,
            // and the authorization header is missing or no provider token
            // is specified."
            return .failure(APNsRejection(.missingProviderToken))
        }
        if let topic = notification.topic {
            guard isTopic(topic.utf8) else { return .failure(APNsRejection(.badTopic)) }
            if let expectedTopic, topic != expectedTopic {
                return .failure(APNsRejection(.deviceTokenNotForTopic))
            }
        }
        if let pushType = notification.pushType, !apnsPushTypes.contains(pushType) {
            return .failure(APNsRejection(.invalidPushType))
        }
        if let collapseID = notification.collapseID, collapseID.utf8.count > maximumCollapseIDSize {
            return .failure(APNsRejection(.badCollapseId))
        }
        if let apnsID = notification.apnsID {
            guard let key = UUIDKey(apnsID[...].utf8) else { return .failure(APNsRejection(.badMessageId)) }
            notification.apnsIDKey = key
        }
        guard !body.isEmpty else { return .failure(APNsRejection(.payloadEmpty)) }
        let limit = notification.pushType == "voip" ? maximumVoIPPayloadSize : maximumPayloadSize
        guard body.count <= limit else { return .failure(APNsRejection(.payloadTooLarge)) }
        guard looksLikeNotificationJSON(body) else { return .failure(.badPayload) }
        return .success(notification)
    }

    /// 64–200 hex digits, an even count (whole bytes).
    static func isDeviceToken(_ token: Substring.UTF8View) -> Bool {
        let count = token.count
        guard count >= 64, count <= 200, count % 2 == 0 else { return false }
        return token.allSatisfy { APNsFaultToken.hexValue($0) != nil }
    }

    /// A bundle id-like topic: non-empty, printable ASCII without spaces.
    static func isTopic(_ topic: String.UTF8View) -> Bool {
        !topic.isEmpty && topic.count <= 255 && topic.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }

    /// An APNs certificate covers its bundle id and the topics Apple's
    /// header table derives from it for a push type (`.voip`,
    /// `.complication`, `.push-type.liveactivity`, …): a universal
    /// certificate lists the app's topics, and Apple names no separate
    /// certificate for the newer push types.
    static func certificateAllows(topic: String, uid: String) -> Bool {
        topic == uid || apnsBundleID(ofTopic: topic) == uid
    }

    /// 10, 5 or 1 (Apple: "apns-priority").
    static func parsePriority(_ text: String) -> Int? {
        switch text {
        case "10": 10
        case "5": 5
        case "1": 1
        default: nil
        }
    }

    /// UNIX seconds, decimal digits only (0 = deliver once).
    static func parseExpiration(_ text: String) -> Int? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 18 else { return nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// The cheap check the hot path can afford: a JSON object (first and last
    /// non-blank bytes are braces) that mentions the key `"aps"`. Full JSON
    /// validation is left to the client tests that decode recorded payloads.
    static func looksLikeNotificationJSON(_ body: [UInt8]) -> Bool {
        guard let first = body.firstIndex(where: { !isBlank($0) }), body[first] == UInt8(ascii: "{"),
              let last = body.lastIndex(where: { !isBlank($0) }), body[last] == UInt8(ascii: "}") else {
            return false
        }
        // `"aps"`: five bytes; a plain scan is as fast as it needs to be here.
        let quote = UInt8(ascii: "\""), a = UInt8(ascii: "a"), p = UInt8(ascii: "p"), s = UInt8(ascii: "s")
        var index = first
        while index + 4 <= last {
            if body[index] == quote && body[index + 1] == a && body[index + 2] == p && body[index + 3] == s
                && body[index + 4] == quote {
                return true
            }
            index += 1
        }
        return false
    }

    @inline(__always)
    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d
    }
}
