// Fuzz target: the route parser `route(method:target:)` (Routing.swift):
// `/relay-to/…`, the health check and the metatext dialect's `/push/…`.
//
// Input: [method selector][target…]. Selector % 8 picks the method; 7 takes
// a length-prefixed method from the input instead.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md); a plain `swift build`
// makes it a replay tool: `route-fuzzer <input file>…` runs the checks.

import APNsCore
import Base64URL
import FCMCore
import FuzzSupport
import HTTPCore
import RelayCore

private let methods = ["POST", "GET", "HEAD", "PUT", "DELETE", "post", "OPTIONS"]

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = Int(input.byte() % 8)
    let method = selector < methods.count
        ? methods[selector] : String(decoding: input.bytes(Int(input.byte() % 16)), as: UTF8.self)
    let target = String(decoding: input.rest(), as: UTF8.self)

    let routed = route(method: method, target: target)
    trace("\(method) \(describe(target.utf8, limit: 300)) → \(routed)")
    switch routed {
    case .relay(let relay):
        require(method == "POST", "relay route for method \(method)")
        let token = Array(relay.deviceToken.utf8)
        require((64...200).contains(token.count) && token.count % 2 == 0, "token of \(token.count) digits")
        require(token.allSatisfy { isDigit($0) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f")) },
                "token is not lowercase hex: \(describe(token))")
        if let keyHash = relay.vapidKeyHash {
            require(keyHash.count == 32, "a vapid key hash of \(keyHash.count) bytes")
            require(containsBytes(target, "?"), "a vapid key hash without a query")
        }
        switch relay.dialect {
        case .tootRelay(let extra):
            // The token is in the path as sent, in some letter case, right
            // after the environment.
            require(containsBytes(asciiLowercased(target), "/\(relay.environment.rawValue)/\(relay.deviceToken)"),
                    "token not taken from the path")
            require(containsBytes(target, "/relay-to/"), "toot-relay dialect outside /relay-to/")
            require(extra.map { !$0.isEmpty } ?? true, "empty extra instead of nil")
            switch relay.app {
            case .defaultApp:
                require(containsBytes(asciiLowercased(target), "/relay-to/\(relay.environment.rawValue)/"),
                        "the default app without /relay-to/<env>/")
            case .id(let app):
                require(!app.isEmpty, "an empty app id")
            case .idOrTopic:
                require(false, "an id-or-topic reference from a /relay-to path")
            }
        case .metatext(let id):
            checkPush(target: target, relay: relay, id: id)
        }
    case .relayFCM(let relay):
        require(method == "POST", "FCM relay route for method \(method)")
        require(containsBytes(target, "/fcm/"), "an FCM route without /fcm/")
        if let token = relay.token {
            require(FCMToken.isValid(token.text.utf8), "an FCM token of the wrong syntax")
            require(containsBytes(target, "/fcm/\(token.text)"), "FCM token not taken from the path")
        }
        require(relay.extra.map { !$0.isEmpty } ?? true, "empty extra instead of nil")
        if let keyHash = relay.vapidKeyHash {
            require(keyHash.count == 32, "a vapid key hash of \(keyHash.count) bytes")
            require(containsBytes(target, "?"), "a vapid key hash without a query")
        }
        if case .idOrTopic = relay.app { require(false, "an id-or-topic reference from a /relay-to path") }
    case .health(let app):
        require(method == "GET" || method == "HEAD", "health route for method \(method)")
        require(containsBytes(target, "/relay-to/_health"), "health outside /relay-to/_health")
        if let app { require(!app.isEmpty, "an empty app's health") }
    case .methodNotAllowed(let allow):
        require(allow == "POST" || allow == "GET, HEAD", "Allow: \(allow)")
        require(method != "POST" || allow == "GET, HEAD", "405 for POST outside _health")
    case .notFound:
        break
    }

    // A query never changes the route (WIRE.md §1.1), but for
    // /push's sandbox=true, which only switches the environment, and vapid=
    // (a restricted endpoint), which only restricts a relay route (32 bytes) or makes
    // it 404 (anything else).
    let utf8 = Array(target.utf8)
    if !utf8.contains(UInt8(ascii: "?")) && !utf8.contains(UInt8(ascii: "#")) {
        require(route(method: method, target: target + "?x=1&y=%zz") == routed, "a query changed the route")
        var sandboxed = routed
        if case .relay(var relay) = routed, case .metatext = relay.dialect {
            relay.environment = .development
            sandboxed = .relay(relay)
        }
        require(route(method: method, target: target + "?y=%zz&sandbox=true") == sandboxed,
                "sandbox=true did what it should not")
        var restricted = routed
        var broken = routed
        if case .relay(var relay) = routed {
            relay.vapidKeyHash = vapidKeyHash
            restricted = .relay(relay)
            broken = .notFound
        } else if case .relayFCM(var relay) = routed {
            relay.vapidKeyHash = vapidKeyHash
            restricted = .relayFCM(relay)
            broken = .notFound
        }
        require(route(method: method, target: target + "?vapid=junk&vapid=\(vapidKeyHashText)") == restricted,
                "vapid= did what it should not")
        require(route(method: method, target: target + "?vapid=\(vapidKeyHashText)&vapid=\(vapidKeyHashText.dropLast())")
                    == broken, "a broken vapid= did what it should not")
        // An absolute-form target routes by its path (RFC 9112 §3.2.2).
        if utf8.first == UInt8(ascii: "/") {
            require(route(method: method, target: "http://relay.example" + target) == routed,
                    "absolute form routes differently")
        }
    }
    return 0
}

/// A SHA-256 and its query text (43 base64url digits).
private let vapidKeyHash: [UInt8] = (0..<32).map { UInt8($0 * 8) }
private let vapidKeyHashText = base64URLEncode(vapidKeyHash)

/// A /push route: from a path `/push/[<app>/]<token>/<id>` of whole
/// segments, production unless the query says sandbox=true.
private func checkPush(target: String, relay: RelayTarget, id: String) {
    let path = asciiLowercased(target)
    require(containsBytes(path, "/push/"), "metatext dialect outside /push/")
    require(!id.isEmpty, "empty id")
    // The token is a whole segment of the path, in some letter case.
    require(containsBytes(path, "/\(relay.deviceToken)/"), "token not taken from the path")
    let bytes = Array(target.utf8)
    let query = bytes.firstIndex(of: UInt8(ascii: "?")).map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) } ?? ""
    if relay.environment == .development {
        require(containsBytes(query, "sandbox"), "development without a sandbox parameter")
    }
    switch relay.app {
    case .idOrTopic(let app): require(!app.isEmpty, "empty app name")
    case .defaultApp: break
    case .id: require(false, "an id-only reference from a /push path")
    }
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (Fuzz/README.md)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRoute(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum RouteReplay { static func main() { replayInputFiles(tool: "route-fuzzer", fuzzOne) } }
#endif
