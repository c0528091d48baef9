import FCMCore

/// What a fleet keeps under a service account's key
/// (`FleetKeys.fcmAccessToken`): `<until> <token>`, the unix time until
/// which the token is sent and the bearer token, or `renewing <instance>`
/// while one instance fetches for the fleet. Read back, it is taken on
/// trust for nothing: `decode` checks the form and bounds, and a failure's
/// words never quote the value (the token is a credential for an hour).
public enum SharedAccessToken: Equatable, Sendable {
    case token(String, keptUntil: Int)
    case renewing(instance: String)

    /// A token of `OAuthAccessToken.maxBytes`, its time and the separator.
    public static let maximumBytes = OAuthAccessToken.maxBytes + 32
    static let renewingWord = "renewing"

    public var encoded: [UInt8] {
        switch self {
        case .token(let token, let keptUntil): Array((String(keptUntil) + " " + token).utf8)
        case .renewing(let instance): Array((Self.renewingWord + " " + instance).utf8)
        }
    }

    public enum DecodeFailure: Error, Equatable, Sendable, CustomStringConvertible {
        case tooLarge(Int)
        case noSeparator
        case badTime
        case badToken
        case badInstance

        public var description: String {
            switch self {
            case .tooLarge(let bytes): "\(bytes) bytes, more than \(SharedAccessToken.maximumBytes)"
            case .noSeparator: "no space after the time"
            case .badTime: "the time is not 1 to 12 decimal digits"
            case .badToken: "the token is not a bearer token (RFC 6750 §2.1)"
            case .badInstance: "the renewing instance's name is not 1 to 128 printable characters"
            }
        }
    }

    public static func decode(_ bytes: [UInt8]) -> Result<SharedAccessToken, DecodeFailure> {
        guard bytes.count <= maximumBytes else { return .failure(.tooLarge(bytes.count)) }
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")) else { return .failure(.noSeparator) }
        let head = bytes[..<space]
        let rest = bytes[(space + 1)...]
        if head.elementsEqual(renewingWord.utf8) {
            guard (1...128).contains(rest.count), rest.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                return .failure(.badInstance)
            }
            return .success(.renewing(instance: String(decoding: rest, as: UTF8.self)))
        }
        guard (1...12).contains(head.count), head.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let keptUntil = Int(String(decoding: head, as: UTF8.self))
        else { return .failure(.badTime) }
        let token = String(decoding: rest, as: UTF8.self)
        guard OAuthAccessToken.isBearerToken(token) else { return .failure(.badToken) }
        return .success(.token(token, keptUntil: keptUntil))
    }
}
