// The token endpoint's answer (RFC 6749 §5): an access token and how long
// to keep it, or the error that says why not.
//
//   200 {"access_token":"ya29.…","expires_in":3599,"token_type":"Bearer"}
//   400 {"error":"invalid_grant","error_description":"Invalid JWT Signature."}

import JSON

/// What a token request came to.
public enum OAuthTokenAnswer: Sendable, Equatable {
    /// 200 with a usable token.
    case token(OAuthAccessToken)
    /// An error answer of RFC 6749 §5.2.
    case refused(OAuthRefusal)
    /// 429 or 5xx without an OAuth error: the endpoint cannot answer now.
    case unavailable(status: Int)
    /// Anything else: a 200 without a usable token, an error without an
    /// `error`, another status. `reason` is one line.
    case malformed(reason: String)

    /// Error bodies longer than this are not read (Google's are under 200 bytes).
    static let maxErrorBodyBytes = 16_384
    /// A token answer is under 2 KB; this bounds the parse.
    static let maxTokenBodyBytes = 65_536

    public init(status: Int, body: [UInt8]) {
        if status == 200 {
            self = Self.token(from: body)
            return
        }
        let fields = body.count <= Self.maxErrorBodyBytes ? try? parseStrictJSON(body) : nil
        if case .string(let code)? = fields?["error"] {
            var description: String? = nil
            if case .string(let text)? = fields?["error_description"] { description = text }
            self = .refused(OAuthRefusal(status: status, code: OAuthErrorCode(code), errorDescription: description))
        } else if status == 429 || (500...599).contains(status) {
            self = .unavailable(status: status)
        } else {
            self = .malformed(reason: "HTTP \(status) without an OAuth error")
        }
    }

    private static func token(from body: [UInt8]) -> OAuthTokenAnswer {
        guard body.count <= maxTokenBodyBytes, let fields = try? parseStrictJSON(body), case .object = fields else {
            return .malformed(reason: "a 200 whose body is not a JSON object")
        }
        guard case .string(let token)? = fields["access_token"] else {
            return .malformed(reason: "a 200 without a string access_token")
        }
        guard OAuthAccessToken.isBearerToken(token) else {
            return .malformed(reason: "a 200 whose access_token is not a bearer token (RFC 6750 §2.1)")
        }
        guard case .string(let type)? = fields["token_type"], type.lowercased() == "bearer" else {
            return .malformed(reason: "a 200 whose token_type is not Bearer")
        }
        guard case .number(let text)? = fields["expires_in"], text.utf8.allSatisfy(isDigit),
              let seconds = Int(text), seconds > 0 else {
            return .malformed(reason: "a 200 without a positive whole expires_in")
        }
        return .token(OAuthAccessToken(value: token, expiresInSeconds: seconds))
    }
}

/// An access token and how long it is kept.
public struct OAuthAccessToken: Sendable, Equatable, CustomStringConvertible {
    /// The token, sent as `authorization: Bearer <value>`.
    public let value: String
    /// As the endpoint said, held to at most a day.
    public let expiresInSeconds: Int

    /// Tokens longer than this are refused (Google's are about 1 KB; the
    /// value goes into a header).
    public static let maxBytes = 4_096
    static let maxExpiresInSeconds = 86_400

    /// How long before its expiry a token is replaced. A token in use must
    /// still be valid when FCM reads the request: a send may wait for a
    /// connection and then up to FCM_TIMEOUT, an asynchronous push is
    /// retried later, and instances sharing a token through Redis have
    /// clocks of their own. Five minutes covers these with room; it costs
    /// one token request per 55 minutes instead of 60 for Google's
    /// 3599-second tokens.
    public static let refreshMarginSeconds = 300

    public init(value: String, expiresInSeconds: Int) {
        self.value = value
        self.expiresInSeconds = min(expiresInSeconds, Self.maxExpiresInSeconds)
    }

    /// Seconds after its request was sent (the endpoint's clock started no
    /// earlier) that the token is used; a new one is fetched after. A short
    /// token (an emulator's) is used for half its life rather than not at all.
    public var keepSeconds: Int {
        expiresInSeconds - min(Self.refreshMarginSeconds, expiresInSeconds / 2)
    }

    /// RFC 6750 §2.1's b64token: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~"
    /// / "+" / "/" ) *"="`, so the value is a header's as it is.
    public static func isBearerToken(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maxBytes else { return false }
        let body = bytes.prefix { $0 != UInt8(ascii: "=") }
        guard !body.isEmpty, bytes.dropFirst(body.count).allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return body.allSatisfy {
            isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
                || $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/")
        }
    }

    /// Never the token: only its length and lifetime.
    public var description: String { "<access token, \(value.utf8.count) bytes, expires in \(expiresInSeconds) s>" }
}

/// An error answer of the token endpoint (RFC 6749 §5.2).
public struct OAuthRefusal: Sendable, Equatable, CustomStringConvertible {
    public let status: Int
    public let code: OAuthErrorCode
    /// `error_description`, as sent.
    public let errorDescription: String?

    public init(status: Int, code: OAuthErrorCode, errorDescription: String? = nil) {
        (self.status, self.code, self.errorDescription) = (status, code, errorDescription)
    }

    /// The endpoint refuses the account itself: its key or the account is
    /// revoked, deleted or wrong (`invalid_grant`: "Invalid JWT Signature.",
    /// "account not found"; `invalid_client`; `unauthorized_client`). A new
    /// assertion from the same file fares no better; the app's credentials
    /// are rejected.
    public var rejectsAccount: Bool {
        switch code {
        case .invalidGrant, .invalidClient, .unauthorizedClient: true
        case .invalidRequest, .unsupportedGrantType, .invalidScope, .other: false
        }
    }

    /// `<status> "<error>" "<error_description>"`, each quoted (40
    /// characters at most, one line).
    public var description: String {
        "\(status) \(quotedForMessage(code.text))" + (errorDescription.map { " " + quotedForMessage($0) } ?? "")
    }
}

/// RFC 6749 §5.2's error codes, and any other kept as sent.
public enum OAuthErrorCode: Sendable, Equatable, Hashable {
    case invalidRequest
    case invalidClient
    case invalidGrant
    case unauthorizedClient
    case unsupportedGrantType
    case invalidScope
    case other(String)

    public init(_ text: String) {
        switch text {
        case "invalid_request": self = .invalidRequest
        case "invalid_client": self = .invalidClient
        case "invalid_grant": self = .invalidGrant
        case "unauthorized_client": self = .unauthorizedClient
        case "unsupported_grant_type": self = .unsupportedGrantType
        case "invalid_scope": self = .invalidScope
        default: self = .other(text)
        }
    }

    public var text: String {
        switch self {
        case .invalidRequest: "invalid_request"
        case .invalidClient: "invalid_client"
        case .invalidGrant: "invalid_grant"
        case .unauthorizedClient: "unauthorized_client"
        case .unsupportedGrantType: "unsupported_grant_type"
        case .invalidScope: "invalid_scope"
        case .other(let text): text
        }
    }
}
