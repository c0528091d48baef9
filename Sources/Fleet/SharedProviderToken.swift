/// A key's provider token as a fleet shares it in Redis
/// (`FleetKeys.providerToken(teamID:keyID:)`): `<iat> <token>`, the unix
/// time it was issued in decimal, one space, the JWT. Read back, it is
/// taken on trust for nothing: `decode` checks the form, and the token
/// provider then checks the JWT against its key (`isWellFormed`). A
/// failure's words never quote the value (a token is a credential for an
/// hour).
public struct SharedProviderToken: Equatable, Sendable {
    public var issuedAt: Int
    public var token: String

    /// A JWT of this relay's form is about 200 bytes; far more is no token.
    public static let maximumBytes = 1024

    public init(issuedAt: Int, token: String) {
        self.issuedAt = issuedAt
        self.token = token
    }

    public var encoded: [UInt8] { Array((String(issuedAt) + " " + token).utf8) }

    public enum DecodeFailure: Error, Equatable, Sendable, CustomStringConvertible {
        case tooLarge(Int)
        case noSeparator
        case badIssuedAt
        case badToken

        public var description: String {
            switch self {
            case .tooLarge(let bytes): "\(bytes) bytes, more than \(SharedProviderToken.maximumBytes)"
            case .noSeparator: "no space between iat and token"
            case .badIssuedAt: "the iat is not 1 to 12 decimal digits"
            case .badToken: "the token is not base64url in three dot-separated parts"
            }
        }
    }

    public static func decode(_ bytes: [UInt8]) -> Result<SharedProviderToken, DecodeFailure> {
        guard bytes.count <= maximumBytes else { return .failure(.tooLarge(bytes.count)) }
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")) else { return .failure(.noSeparator) }
        let digits = bytes[..<space]
        guard (1...12).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let issuedAt = Int(String(decoding: digits, as: UTF8.self))
        else { return .failure(.badIssuedAt) }
        let token = bytes[(space + 1)...]
        let isBase64URL: (UInt8) -> Bool = { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isBase64URL) }) else {
            return .failure(.badToken)
        }
        return .success(SharedProviderToken(issuedAt: issuedAt, token: String(decoding: token, as: UTF8.self)))
    }
}
