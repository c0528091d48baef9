// The inbound contract of WIRE.md §1, part one: which route a
// request target names (`/relay-to/[<app>/]<env>/<token>[/<extra…>]`, the metatext
// dialect `/push/[<app-or-topic>/]<token>/<id>[?sandbox=true]`, the health
// check), with the percent-decoding of `<extra…>`, `<id>` and `<app-or-topic>`,
// and the query's `vapid=` that makes an endpoint restricted (RFC 8292 §4).

import APNsCore
import Base64URL
import FCMCore
import HTTPCore

/// Which app a request names, as the URL writes it: routing
/// knows no configuration, so the handler resolves the reference against
/// the apps the relay serves.
public enum AppReference: Sendable, Equatable {
    /// A URL without an app part: the relay's default app.
    case defaultApp
    /// `<app>` of `/relay-to/<app>/<env>/…`: an app's id.
    case id(String)
    /// `<app-or-topic>` of `/push/<app-or-topic>/…`, percent-decoded: an
    /// app's id, or its topic (Mona puts its bundle id there).
    case idOrTopic(String)
}

/// Which APNs payload a request's notification carries (WIRE.md §2).
public enum PayloadDialect: Sendable, Equatable {
    /// toot-relay's `p`/`k`/`s`/`x` payload, from `/relay-to/…`. `extra` is
    /// the rest of the path after `<token>/`, percent-decoded; nil when
    /// absent or empty. Sent to the app as `x`.
    case tootRelay(extra: String?)
    /// metatext-apns's `i`/`m`/`s`/`k` payload, from `/push/…`. `id` is the
    /// last path segment, percent-decoded, never empty. Sent as `i`.
    case metatext(id: String)
}

/// Where one relay request goes: `/relay-to/<env>/<token>[/<extra…>]` or
/// `/push/[<app-or-topic>/]<token>/<id>[?sandbox=true]`.
public struct RelayTarget: Sendable, Equatable {
    public var app: AppReference
    public var environment: APNsEnvironment
    /// Lowercased hex, even length, 64–200 digits.
    public var deviceToken: String
    public var dialect: PayloadDialect
    /// The query's `vapid=<base64url of SHA-256 of the server's key>`
    /// (RFC 8292 §4): 32 bytes, and only pushes signed by that key are
    /// delivered; nil: unrestricted.
    public var vapidKeyHash: [UInt8]?

    /// toot-relay's `x`: nil for the metatext dialect.
    public var extra: String? {
        if case .tootRelay(let extra) = dialect { extra } else { nil }
    }

    public init(app: AppReference = .defaultApp, environment: APNsEnvironment, deviceToken: String,
                dialect: PayloadDialect, vapidKeyHash: [UInt8]? = nil) {
        self.app = app
        self.environment = environment
        self.deviceToken = deviceToken
        self.dialect = dialect
        self.vapidKeyHash = vapidKeyHash
    }

    /// A `/relay-to/…` target of the default app.
    public init(environment: APNsEnvironment, deviceToken: String, extra: String?) {
        self.init(environment: environment, deviceToken: deviceToken, dialect: .tootRelay(extra: extra))
    }
}

/// Where one FCM relay request goes: `/relay-to/[<app>/]fcm/<token>[/<extra…>]`,
/// webpush-fcm-relay's URL with toot-relay's app part and extra path.
public struct FCMRelayTarget: Sendable, Equatable {
    public var app: AppReference
    /// The registration token; nil when the path's token is not FCM's
    /// syntax (`FCMToken`): 400, and FCM is never asked.
    public var token: FCMToken?
    /// The rest of the path after `<token>/`, percent-decoded; nil when
    /// absent or empty. Sent to the app as `x`, as on the APNs route.
    public var extra: String?
    /// As `RelayTarget.vapidKeyHash`.
    public var vapidKeyHash: [UInt8]?

    public init(app: AppReference = .defaultApp, token: FCMToken?, extra: String? = nil, vapidKeyHash: [UInt8]? = nil) {
        (self.app, self.token, self.extra, self.vapidKeyHash) = (app, token, extra, vapidKeyHash)
    }
}

/// The path segment that names FCM where an APNs URL names its environment:
/// therefore no app's id.
public let fcmRouteSegment = "fcm"

public enum Route: Sendable, Equatable {
    case relay(RelayTarget)
    /// `POST /relay-to/[<app>/]fcm/<token>[/<extra…>]`.
    case relayFCM(FCMRelayTarget)
    /// `GET` or `HEAD /relay-to/_health` (app nil: the relay as a whole) or
    /// `/relay-to/_health/<app>` (one app, by id).
    case health(app: String?)
    /// 405; `allow` is the value for the `Allow` header (RFC 9110 §15.5.6).
    case methodNotAllowed(allow: String)
    case notFound
}

/// Routes a request (WIRE.md §1.1).
///
/// - The query string (and a fragment, should a client send one) is ignored,
///   but for `vapid=` (any relay URL; not 32 bytes of base64url: 404) and
///   `sandbox=true` (`/push/…`).
/// - An absolute-form target (`http://host/path`, RFC 9112 §3.2.2) is routed
///   by its path.
/// - `GET`/`HEAD /relay-to/_health` → health (HEAD: same answer without a body,
///   as monitors probe with either); other methods there → 405 `Allow: GET, HEAD`.
/// - Any other method on `/relay-to/…` → 405 `Allow: POST`, whether or not the
///   rest of the path is valid.
/// - `POST` with an unknown environment or a malformed token → 404.
/// - `POST /relay-to/[<app>/]fcm/<token>[/<extra…>]` → an FCM relay; a token
///   that is not FCM's syntax is the handler's 400 (webpush-fcm-relay's URL
///   carries any token, and the sender is told why).
/// - `<extra…>` is percent-decoded; a `%` not followed by two hex digits is
///   kept literally (lenient: the path came from the app's own registration,
///   and refusing would make Mastodon delete the subscription). Decoded bytes
///   that are not valid UTF-8 become U+FFFD, which is what Go's JSON encoder
///   did in the original relay.
public func route(method: String, target: String) -> Route {
    // Scanned as contiguous UTF-8 (in place for a native String).
    var target = target
    return target.withUTF8 { route(method: method, target: $0) }
}

private func route(method: String, target: UnsafeBufferPointer<UInt8>) -> Route {
    let (path, query) = requestPathAndQuery(of: target[...])
    let prefix = "/relay-to/".utf8
    guard path.starts(with: prefix) else {
        let pushPrefix = "/push/".utf8
        guard path.starts(with: pushPrefix) else { return .notFound }
        return routePush(method: method, rest: path.dropFirst(pushPrefix.count), query: query)
    }
    let rest = path.dropFirst(prefix.count)

    // The first byte first: a generic starts(with:) on every request cost
    // about 500 instructions (callgrind), and only `_health` starts with `_`
    // in practice.
    if rest.first == UInt8(ascii: "_"), rest.starts(with: "_health".utf8) {
        let afterHealth = rest.dropFirst("_health".utf8.count)
        let app: String?
        if afterHealth.isEmpty {
            app = nil
        } else if afterHealth.first == UInt8(ascii: "/"), afterHealth.count > 1,
                  !afterHealth.dropFirst().contains(UInt8(ascii: "/")) {
            app = percentDecodedText(afterHealth.dropFirst())
        } else {
            return routeRelay(method: method, rest: rest, query: query)
        }
        return method == "GET" || method == "HEAD" ? .health(app: app) : .methodNotAllowed(allow: "GET, HEAD")
    }
    return routeRelay(method: method, rest: rest, query: query)
}

/// `/relay-to/` is behind `rest`: `<env>/<token>[/<extra…>]` (the default
/// app) or `<app>/<env>/<token>[/<extra…>]` (an app's id is
/// never an environment's name, so the two cannot be confused).
@inline(__always)
private func routeRelay(method: String, rest: TargetBytes, query: TargetBytes) -> Route {
    guard method == "POST" else { return .methodNotAllowed(allow: "POST") }

    let slash = UInt8(ascii: "/")
    guard let firstEnd = rest.firstIndex(of: slash) else { return .notFound }
    var app = AppReference.defaultApp
    var environmentName = rest[..<firstEnd]
    var afterEnvironment = rest[(firstEnd + 1)...]
    var environment = environmentNamed(environmentName)
    if environment == nil {
        if isFCMSegment(environmentName) { return routeFCM(app: app, rest: afterEnvironment, query: query) }
        // `<app>/<env>/…`
        guard !environmentName.isEmpty, let secondEnd = afterEnvironment.firstIndex(of: slash) else { return .notFound }
        app = .id(percentDecodedText(environmentName))
        environmentName = afterEnvironment[..<secondEnd]
        afterEnvironment = afterEnvironment[(secondEnd + 1)...]
        environment = environmentNamed(environmentName)
        if environment == nil, isFCMSegment(environmentName) {
            return routeFCM(app: app, rest: afterEnvironment, query: query)
        }
    }
    guard let environment else { return .notFound }
    let tokenEnd = afterEnvironment.firstIndex(of: slash) ?? afterEnvironment.endIndex
    guard let deviceToken = normalizedDeviceToken(afterEnvironment[..<tokenEnd]) else { return .notFound }

    let parameters = QueryParameters(query)
    guard let vapidKeyHash = parameters.vapidKeyHash else { return .notFound }

    return .relay(RelayTarget(app: app, environment: environment, deviceToken: deviceToken,
                              dialect: .tootRelay(extra: extraPath(afterEnvironment, tokenEnd: tokenEnd)),
                              vapidKeyHash: vapidKeyHash))
}

/// `fcm/` and the app are behind `rest`: `<token>[/<extra…>]`. The token is
/// the whole segment; an empty one is no token at all (404, as on the APNs
/// route).
private func routeFCM(app: AppReference, rest: TargetBytes, query: TargetBytes) -> Route {
    let tokenEnd = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
    let tokenBytes = rest[..<tokenEnd]
    guard !tokenBytes.isEmpty else { return .notFound }
    let parameters = QueryParameters(query)
    guard let vapidKeyHash = parameters.vapidKeyHash else { return .notFound }
    return .relayFCM(FCMRelayTarget(app: app, token: FCMToken(String(decoding: tokenBytes, as: UTF8.self)),
                                    extra: extraPath(rest, tokenEnd: tokenEnd), vapidKeyHash: vapidKeyHash))
}

/// toot-relay's `<extra…>`: what follows the token's segment and its `/`,
/// percent-decoded; nil when absent or empty.
@inline(__always)
private func extraPath(_ rest: TargetBytes, tokenEnd: TargetBytes.Index) -> String? {
    guard tokenEnd != rest.endIndex else { return nil }
    let rawExtra = rest[(tokenEnd + 1)...]
    return rawExtra.isEmpty ? nil : percentDecodedText(rawExtra)
}

@inline(__always)
private func isFCMSegment(_ name: TargetBytes) -> Bool {
    name.elementsEqual(fcmRouteSegment.utf8)
}

@inline(__always)
private func environmentNamed(_ name: TargetBytes) -> APNsEnvironment? {
    if name.elementsEqual(APNsEnvironment.production.rawValue.utf8) { return .production }
    if name.elementsEqual(APNsEnvironment.development.rawValue.utf8) { return .development }
    return nil
}

/// `/push/` is behind `rest`: `<token>/<id>` or `<app-or-topic>/<token>/<id>`.
private func routePush(method: String, rest: TargetBytes, query: TargetBytes) -> Route {
    guard method == "POST" else { return .methodNotAllowed(allow: "POST") }
    // metatext-apns' Sinatra routes match whole segments: no empty one, no
    // more, no fewer.
    let segments = rest.split(separator: UInt8(ascii: "/"), maxSplits: 3, omittingEmptySubsequences: false)
    guard (2...3).contains(segments.count), segments.allSatisfy({ !$0.isEmpty }),
          let deviceToken = normalizedDeviceToken(segments[segments.count - 2])
    else { return .notFound }
    let parameters = QueryParameters(query)
    guard let vapidKeyHash = parameters.vapidKeyHash else { return .notFound }
    let app: AppReference = segments.count == 3 ? .idOrTopic(percentDecodedText(segments[0])) : .defaultApp
    return .relay(RelayTarget(
        app: app, environment: parameters.sandbox ? .development : .production, deviceToken: deviceToken,
        dialect: .metatext(id: percentDecodedText(segments[segments.count - 1])), vapidKeyHash: vapidKeyHash))
}

/// What a relay URL's query (RFC 3986 §3.4, `&`-separated `name=value`
/// pairs, names and values percent-decoded, as Rack reads it) says; the last
/// pair of a name decides. Other names are ignored.
private struct QueryParameters {
    /// `sandbox=true` (`/push/…` only).
    var sandbox = false
    /// `vapid=` (RFC 8292 §4): `.some(nil)` when absent (unrestricted),
    /// `.some(hash)` for 32 bytes of base64url, nil for anything else: the
    /// endpoint URL itself is broken, a 404 (a URL the app made wrongly must
    /// not quietly deliver to everyone).
    var vapidKeyHash: [UInt8]?? = .some(nil)

    init(_ query: TargetBytes) {
        // The unrestricted URL without a query costs nothing (no split, no allocation).
        guard !query.isEmpty else { return }
        for pair in query.split(separator: UInt8(ascii: "&")) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            let value = equals == pair.endIndex ? pair[equals...] : pair[(equals + 1)...]
            let name = percentDecoded(pair[..<equals])
            if name.elementsEqual("sandbox".utf8) {
                sandbox = percentDecoded(value).elementsEqual("true".utf8)
            } else if name.elementsEqual("vapid".utf8) {
                vapidKeyHash = Self.keyHash(percentDecoded(value))
            }
        }
    }

    /// SHA-256 is 32 bytes: 43 base64url digits (with or without padding;
    /// either alphabet, as `base64URLDecode` reads everything).
    private static func keyHash(_ text: [UInt8]) -> [UInt8]?? {
        let decoded = text.withUnsafeBytes { try? base64URLDecode($0) }
        guard let decoded, decoded.count == 32 else { return nil }
        return .some(decoded)
    }
}

private typealias TargetBytes = Slice<UnsafeBufferPointer<UInt8>>

/// The path and the query of a request target: no fragment, no scheme and
/// authority for absolute-form.
private func requestPathAndQuery(of target: TargetBytes) -> (path: TargetBytes, query: TargetBytes) {
    var path = target
    var query = target[target.endIndex...]
    if let end = path.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
        if target[end] == UInt8(ascii: "?") {
            let afterMark = target[(end + 1)...]
            query = afterMark[..<(afterMark.firstIndex(of: UInt8(ascii: "#")) ?? afterMark.endIndex)]
        }
        path = path[..<end]
    }
    if path.first != UInt8(ascii: "/") {
        for scheme in ["http://".utf8, "https://".utf8]
        where path.count >= scheme.count && asciiCaseInsensitiveEquals(path.prefix(scheme.count), scheme) {
            let afterScheme = path.dropFirst(scheme.count)
            return (afterScheme[(afterScheme.firstIndex(of: UInt8(ascii: "/")) ?? afterScheme.endIndex)...], query)
        }
    }
    return (path, query)
}

/// The device token lowercased, if it is even-length hex of 64–200 digits
/// (Apple documents tokens as variable length; they are 32 bytes today).
/// Inlined into both routes: a call here cost /relay-to measurably.
/// The one definition of a device token (DeviceToken.swift calls it too).
@inline(__always)
func normalizedDeviceToken(_ bytes: some Collection<UInt8>) -> String? {
    guard (64...200).contains(bytes.count), bytes.count % 2 == 0, bytes.allSatisfy({ hexValue($0) != nil })
    else { return nil }
    // Hex digits are ASCII: lowercased straight into the String's storage.
    return asciiLowercased(bytes)
}

/// A path segment percent-decoded, bytes that are not UTF-8 as U+FFFD.
private func percentDecodedText(_ bytes: TargetBytes) -> String {
    String(decoding: percentDecoded(bytes), as: UTF8.self)
}

/// Percent-decodes (RFC 3986 §2.1), keeping malformed escapes literally.
func percentDecoded(_ bytes: some Collection<UInt8>) -> [UInt8] {
    let input = Array(bytes)
    var output: [UInt8] = []
    output.reserveCapacity(input.count)
    var index = 0
    while index < input.count {
        if input[index] == UInt8(ascii: "%"), index + 2 < input.count,
           let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) {
            output.append(UInt8(high << 4 | low))
            index += 3
        } else {
            output.append(input[index])
            index += 1
        }
    }
    return output
}
