// Reading a push's VAPID authentication (RFC 8292 §3) from its
// headers, in the two forms senders use: RFC 8292's `Authorization: vapid
// t=<JWT>, k=<key>` (Mastodon's aes128gcm path) and draft-ietf-webpush-vapid-01's
// `Authorization: WebPush <JWT>` with the key in `Crypto-Key: p256ecdsa=<key>`
// (Mastodon's aesgcm path).

import Base64URL
import HTTPCore
import RelayCore

/// A push's VAPID credentials as its headers carry them, not yet checked.
public struct VAPIDAuthentication: Sendable, Equatable {
    /// The JWT, compact serialization (RFC 7515 §7.1), at most
    /// `VAPIDLimits.maxTokenBytes`.
    public var token: String
    /// The application server's key: a 65-byte uncompressed P-256 point
    /// (0x04‖x‖y, RFC 8292 §3.2).
    public var publicKey: [UInt8]

    public init(token: String, publicKey: [UInt8]) {
        self.token = token
        self.publicKey = publicKey
    }
}

/// What the headers say about VAPID.
public enum VAPIDHeaders: Sendable, Equatable {
    /// No VAPID authentication at all (no Authorization, or one of another
    /// scheme): 401.
    case absent
    case present(VAPIDAuthentication)
    /// A VAPID scheme whose parameters are wrong; the reason is one line and
    /// shows neither the JWT nor the key: 403.
    case malformed(String)
}

/// Bounds on what the relay reads from VAPID headers (never a crash or a
/// large allocation on hostile input).
public enum VAPIDLimits {
    /// A JWT longer than this is malformed. Mastodon's are about 300 bytes
    /// (a 65-byte key, an origin and a `sub` mailto or URL); the header
    /// block as a whole is already capped (`MAX_HEADER_BYTES`).
    public static let maxTokenBytes = 4096
    /// RFC 8292 §2: `exp` at most 24 hours ahead.
    public static let maxLifetime = 86_400
    /// Clock skew allowed beyond those 24 hours: the sender's clock may run
    /// ahead of the relay's by this much (the same 5 minutes the APNs
    /// emulator allows a provider token's `iat`).
    public static let clockSkew = 300
}

/// The VAPID authentication in `headers` (RFC 8292 §3; the draft-01 form).
///
/// - Scheme names compare case-insensitively (RFC 9110 §11.1); the key is
///   base64url with or without padding (either alphabet: `base64URLDecode`).
/// - `vapid`: the `t` and `k` auth-params, in any order, separated by `,`
///   (or `;`), white space and quoted-strings tolerated as in
///   `HeaderParameters.swift`. `Crypto-Key` is not read.
/// - `WebPush`: the JWT is the rest of the value (a token68); the key is the
///   `p256ecdsa` parameter of `Crypto-Key` (several fields and entries read).
/// - Another scheme, or no Authorization: `absent`.
/// - Malformed: two Authorization fields, a missing or repeated `t`/`k`, two
///   different `p256ecdsa` keys, a key that is not a 65-byte uncompressed
///   point, an empty or oversized JWT.
public func vapidAuthentication(in headers: HTTPHeaders) -> VAPIDHeaders {
    var values = headers.valueBytes(for: "authorization").makeIterator()
    guard let authorization = values.next() else { return .absent }
    // RFC 9110 §11.6.2: Authorization is a singleton; two are ambiguous.
    if values.next() != nil { return .malformed("more than one Authorization field") }

    let value = trimmingOWS(authorization)
    let schemeEnd = value.firstIndex(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) ?? value.endIndex
    let scheme = value[..<schemeEnd]
    let credentials = trimmingOWS(value[schemeEnd...])
    if asciiCaseInsensitiveEquals(scheme, "vapid".utf8) {
        return vapidScheme(credentials)
    }
    if asciiCaseInsensitiveEquals(scheme, "webpush".utf8) {
        return webPushScheme(token: credentials, headers: headers)
    }
    return .absent
}

/// `vapid t=<JWT>, k=<key>` (RFC 8292 §3.1, §3.2).
private func vapidScheme(_ credentials: ArraySlice<UInt8>) -> VAPIDHeaders {
    let tokens = parameterValues(named: "t", in: credentials)
    let keys = parameterValues(named: "k", in: credentials)
    guard tokens.count == 1 else {
        return .malformed(tokens.isEmpty ? "vapid authorization without t=" : "vapid authorization with more than one t=")
    }
    guard keys.count == 1 else {
        return .malformed(keys.isEmpty ? "vapid authorization without k=" : "vapid authorization with more than one k=")
    }
    return authentication(token: tokens[0], key: keys[0], keyName: "k")
}

/// `WebPush <JWT>` with `Crypto-Key: p256ecdsa=<key>` (draft-ietf-webpush-vapid-01 §4).
private func webPushScheme(token: ArraySlice<UInt8>, headers: HTTPHeaders) -> VAPIDHeaders {
    var key: ArraySlice<UInt8>?
    for value in headers.valueBytes(for: "crypto-key") {
        for candidate in parameterValues(named: "p256ecdsa", in: value) {
            // The same key twice is harmless; two keys are ambiguous.
            if let key, !key.elementsEqual(candidate) {
                return .malformed("Crypto-Key with more than one p256ecdsa key")
            }
            key = candidate
        }
    }
    guard let key else { return .malformed("WebPush authorization without p256ecdsa= in Crypto-Key") }
    return authentication(token: token, key: key, keyName: "p256ecdsa")
}

private func authentication(token: ArraySlice<UInt8>, key: ArraySlice<UInt8>, keyName: String) -> VAPIDHeaders {
    guard !token.isEmpty else { return .malformed("empty VAPID JWT") }
    guard token.count <= VAPIDLimits.maxTokenBytes else {
        return .malformed("VAPID JWT longer than \(VAPIDLimits.maxTokenBytes) bytes")
    }
    guard let publicKey = key.withUnsafeBytes({ try? base64URLDecode($0) }) else {
        return .malformed("\(keyName)= is not base64url")
    }
    guard publicKey.count == 65, publicKey[0] == 0x04 else {
        return .malformed("\(keyName)= is not an uncompressed P-256 key (65 bytes, 0x04 first)")
    }
    return .present(VAPIDAuthentication(token: String(decoding: token, as: UTF8.self), publicKey: publicKey))
}
