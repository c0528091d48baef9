// A VAPID JWT taken apart (RFC 8292 §2; RFC 7515 §7.1 compact
// serialization, RFC 7519 claims), before any signature check.

// The JWT's header and claims are JSON, read by Foundation's JSONDecoder:
// a real parser (strings with escapes and surrogates, numbers in every form
// RFC 8259 allows, nesting, trailing data) rather than a hand-written one,
// which would have to get all of that right to refuse and accept exactly
// what a sender's JWT library writes. FoundationEssentials where it exists:
// the decoder without ICU.
#if canImport(FoundationEssentials)
import Base64URL
import FoundationEssentials
#else
import Foundation
#endif
import RelayCore

/// The parts of a VAPID JWT the relay checks.
struct VAPIDToken: Equatable {
    /// `<header>.<claims>` as sent: what the signature covers (RFC 7515 §5.1).
    var signingInput: [UInt8]
    /// ES256: r‖s, 32 bytes each (RFC 7518 §3.4).
    var signature: [UInt8]
    /// `aud`: the push service's origin (RFC 8292 §2).
    var audience: String
    /// `exp`, seconds since the epoch (RFC 7519 §4.1.4); a fractional
    /// NumericDate (RFC 7519 §2 allows one) is rounded down.
    var expiry: Int

    /// The token's parts, or a one-line reason that shows no part of it.
    static func parse(_ token: String) -> Result<VAPIDToken, VAPIDTokenError> {
        let bytes = Array(token.utf8)
        guard bytes.count <= VAPIDLimits.maxTokenBytes else { return .failure(.tooLong) }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }),
              let headerJSON = decoded(parts[0]), let claimsJSON = decoded(parts[1]), let signature = decoded(parts[2])
        else { return .failure(.notThreeParts) }

        let decoder = JSONDecoder()
        guard let header = try? decoder.decode(Header.self, from: Data(headerJSON)) else {
            return .failure(.header)
        }
        guard header.alg == "ES256" else { return .failure(.algorithm) }
        guard header.crit == nil else { return .failure(.critical) }
        guard let claims = try? decoder.decode(Claims.self, from: Data(claimsJSON)) else {
            return .failure(.claims)
        }
        guard signature.count == 64 else { return .failure(.signatureLength) }
        return .success(VAPIDToken(signingInput: Array(bytes[..<parts[1].endIndex]), signature: signature,
                                   audience: claims.audience, expiry: claims.expiry))
    }

    private static func decoded(_ part: ArraySlice<UInt8>) -> [UInt8]? {
        part.withUnsafeBytes { try? base64URLDecode($0) }
    }

    /// The JOSE header (RFC 7515 §4): `alg` required, `typ` not (RFC 7519
    /// §5.1 makes it optional, so it is not read); `crit` names extensions
    /// the relay does not understand, which RFC 7515 §4.1.11 says to refuse.
    private struct Header: Decodable {
        var alg: String
        var crit: AnyJSONValue?
    }

    /// Any JSON value, unread: only whether it is there counts.
    private struct AnyJSONValue: Decodable {
        init(from decoder: any Decoder) {}
    }

    /// The claims RFC 8292 §2 requires; `sub` and others are not checked.
    private struct Claims: Decodable {
        var audience: String
        var expiry: Int

        static let farthest = 1_000_000_000_000_000

        enum CodingKeys: String, CodingKey {
            case audience = "aud"
            case expiry = "exp"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            audience = try container.decode(String.self, forKey: .audience)
            if let whole = try? container.decode(Int.self, forKey: .expiry) {
                // Clamped (a date 30 million years away is as far as any):
                // the checks subtract times and must not overflow.
                expiry = max(-Self.farthest, min(Self.farthest, whole))
            } else {
                // RFC 7519 §2: a NumericDate may be fractional. Bounded so
                // that the arithmetic on it cannot overflow.
                let seconds = try container.decode(Double.self, forKey: .expiry)
                guard seconds.isFinite, abs(seconds) <= Double(Self.farthest) else {
                    throw DecodingError.dataCorruptedError(forKey: .expiry, in: container, debugDescription: "exp")
                }
                expiry = Int(seconds.rounded(.down))
            }
        }
    }
}

/// Why a JWT is malformed; each a one-line reason naming no part of it.
enum VAPIDTokenError: Error, Equatable {
    case tooLong, notThreeParts, header, algorithm, critical, claims, signatureLength

    var reason: String {
        switch self {
        case .tooLong: "VAPID JWT longer than \(VAPIDLimits.maxTokenBytes) bytes"
        case .notThreeParts: "VAPID JWT is not three base64url parts"
        case .header: "VAPID JWT header is not a JSON object with a string alg"
        case .algorithm: "VAPID JWT alg is not ES256"
        case .critical: "VAPID JWT header has crit extensions"
        case .claims: "VAPID JWT claims are not a JSON object with a string aud and a numeric exp"
        case .signatureLength: "VAPID JWT signature is not 64 bytes (ES256 r||s)"
        }
    }
}
