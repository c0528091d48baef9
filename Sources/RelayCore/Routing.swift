// The inbound contract of ARCHITECTURE.md §1, part one: which route a
// request target names (`/relay-to/<env>/<token>[/<extra…>]`, the health
// check), with the percent-decoding of `<extra…>`.

/// Which APNs service a subscription's notifications go to.
public enum APNsEnvironment: String, Sendable, Equatable {
    case production
    case development
}

/// Where one relay request goes: the path `/relay-to/<env>/<token>[/<extra…>]`.
public struct RelayTarget: Sendable, Equatable {
    public var environment: APNsEnvironment
    /// Lowercased hex, even length, 64–200 digits.
    public var deviceToken: String
    /// The rest of the path after `<token>/`, percent-decoded; nil when absent
    /// or empty. Sent to the app as `x`.
    public var extra: String?

    public init(environment: APNsEnvironment, deviceToken: String, extra: String?) {
        self.environment = environment
        self.deviceToken = deviceToken
        self.extra = extra
    }
}

public enum Route: Sendable, Equatable {
    case relay(RelayTarget)
    /// `GET` or `HEAD /relay-to/_health`.
    case health
    /// 405; `allow` is the value for the `Allow` header (RFC 9110 §15.5.6).
    case methodNotAllowed(allow: String)
    case notFound
}

/// Routes a request (ARCHITECTURE.md §1).
///
/// - The query string (and a fragment, should a client send one) is ignored.
/// - An absolute-form target (`http://host/path`, RFC 9112 §3.2.2) is routed
///   by its path.
/// - `GET`/`HEAD /relay-to/_health` → health (HEAD: same answer without a body,
///   as monitors probe with either); other methods there → 405 `Allow: GET, HEAD`.
/// - Any other method on `/relay-to/…` → 405 `Allow: POST`, whether or not the
///   rest of the path is valid.
/// - `POST` with an unknown environment or a malformed token → 404.
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
    let path = requestPath(of: target[...])
    let prefix = "/relay-to/".utf8
    guard path.starts(with: prefix) else { return .notFound }
    let rest = path.dropFirst(prefix.count)

    if rest.elementsEqual("_health".utf8) {
        return method == "GET" || method == "HEAD" ? .health : .methodNotAllowed(allow: "GET, HEAD")
    }
    guard method == "POST" else { return .methodNotAllowed(allow: "POST") }

    let slash = UInt8(ascii: "/")
    guard let environmentEnd = rest.firstIndex(of: slash) else { return .notFound }
    let environmentName = rest[..<environmentEnd]
    let environment: APNsEnvironment
    if environmentName.elementsEqual(APNsEnvironment.production.rawValue.utf8) {
        environment = .production
    } else if environmentName.elementsEqual(APNsEnvironment.development.rawValue.utf8) {
        environment = .development
    } else {
        return .notFound
    }
    let afterEnvironment = rest[(environmentEnd + 1)...]
    let tokenEnd = afterEnvironment.firstIndex(of: slash) ?? afterEnvironment.endIndex
    guard let deviceToken = normalizedDeviceToken(afterEnvironment[..<tokenEnd]) else { return .notFound }

    var extra: String?
    if tokenEnd != afterEnvironment.endIndex {
        let rawExtra = afterEnvironment[(tokenEnd + 1)...]
        if !rawExtra.isEmpty { extra = String(decoding: percentDecoded(rawExtra), as: UTF8.self) }
    }
    return .relay(RelayTarget(environment: environment, deviceToken: deviceToken, extra: extra))
}

private typealias TargetBytes = Slice<UnsafeBufferPointer<UInt8>>

/// The path of a request target: no query, no fragment, no scheme and
/// authority for absolute-form.
private func requestPath(of target: TargetBytes) -> TargetBytes {
    var path = target
    if let end = path.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
        path = path[..<end]
    }
    if path.first != UInt8(ascii: "/") {
        for scheme in ["http://".utf8, "https://".utf8]
        where path.count >= scheme.count && asciiCaseInsensitiveEquals(path.prefix(scheme.count), scheme) {
            let afterScheme = path.dropFirst(scheme.count)
            return afterScheme[(afterScheme.firstIndex(of: UInt8(ascii: "/")) ?? afterScheme.endIndex)...]
        }
    }
    return path
}

/// The device token lowercased, if it is even-length hex of 64–200 digits
/// (Apple documents tokens as variable length; they are 32 bytes today).
private func normalizedDeviceToken(_ bytes: TargetBytes) -> String? {
    guard (64...200).contains(bytes.count), bytes.count % 2 == 0, bytes.allSatisfy({ hexValue($0) != nil })
    else { return nil }
    // Hex digits are ASCII: lowercased straight into the String's storage.
    return asciiLowercased(bytes)
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
