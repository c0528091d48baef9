// Fuzz target: what the provider API reads of a request before any body
// (WIRE.md §4.1): its route (`apiRoute(method:target:)`, APIRouting.swift) and
// its `Authorization` field against a keyring (`APIKeyring.authorize`).
//
// Input: [mode][…]. Mode even: [method selector][target…], as the route
// target. Mode odd: the `Authorization` value, checked against two keys.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md); a plain `swift build`
// makes it a replay tool: `api-request-fuzzer <input file>…` runs the checks.

import FuzzSupport
import HTTPCore
import RelayCore

private let methods = ["POST", "GET", "HEAD", "PUT", "post", "OPTIONS", "DELETE"]
private let tootKey = "toot-key-0123456789abcdef"
private let allKey = "every-app-key-0123456789"
// Made once: the keys are valid, so this never fails.
private let keyring: APIKeyring = {
    guard let toot = try? APIKey(validating: tootKey), let all = try? APIKey(validating: allKey),
          let ring = try? APIKeyring([APIKeyEntry(name: "toot", key: toot, apps: .only(["toot"])),
                                      APIKeyEntry(name: "all", key: all, apps: .all)])
    else { fatalError("api-request fuzzer: its own keys are refused") }
    return ring
}()

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    if input.byte() % 2 == 0 {
        fuzzRoute(&input)
    } else {
        fuzzAuthorization(String(decoding: input.rest(), as: UTF8.self))
    }
    return 0
}

private func fuzzRoute(_ input: inout FuzzInput) {
    let method = methods[Int(input.byte()) % methods.count]
    let target = String(decoding: input.rest(), as: UTF8.self)
    let routed = apiRoute(method: method, target: target)
    trace("\(method) \(describe(target.utf8, limit: 300)) → \(routed)")
    switch routed {
    case .push, .xmlRPC:
        require(method == "POST", "\(routed) for \(method)")
    case .health:
        require(method == "GET" || method == "HEAD", "health for \(method)")
    case .device(_, let token):
        require(method == "POST", "device for \(method)")
        require(!token.isEmpty && !token.utf8.contains(UInt8(ascii: "/")), "device token \(describe(token.utf8))")
        require(!token.utf8.contains(UInt8(ascii: "?")), "a query in the device token")
    case .feedback(let app):
        require(method == "GET", "feedback for \(method)")
        require(!app.isEmpty, "an empty feedback app")
    case .broadcast(_, _, let bundleID):
        // The handler checks the method, in APNs' words.
        require(!bundleID.isEmpty && !bundleID.utf8.contains(UInt8(ascii: "/")), "bundle id \(describe(bundleID.utf8))")
        require(!bundleID.utf8.contains(UInt8(ascii: "?")), "a query in the bundle id")
    case .methodNotAllowed(let allow):
        require(["POST", "GET, HEAD", "GET"].contains(allow), "Allow: \(allow)")
    case .notFound:
        break
    }
    // The query is ignored by every route.
    if !target.utf8.contains(UInt8(ascii: "?")) {
        require(apiRoute(method: method, target: target + "?x=1&y=%zz") == routed, "a query changed the route")
    }
}

private func fuzzAuthorization(_ header: String) {
    let verdict = keyring.authorize(authorization: header)
    trace("Authorization \(describe(header.utf8, limit: 200)) → \(verdict)")
    if case .key(let name, _) = verdict {
        // Bearer names the key itself; Basic carries it base64-encoded.
        let key = name == "toot" ? tootKey : allKey
        require(containsBytes(header, key) || containsBytes(asciiLowercased(header), "basic"), "a key accepted from \(describe(header.utf8))")
    }
    // The keys themselves are always accepted, in either scheme's case.
    require(keyring.authorize(authorization: "Bearer " + tootKey) == .key(name: "toot", apps: .only(["toot"])),
            "the toot key is refused")
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (Fuzz/README.md)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPIRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum APIRequestReplay { static func main() { replayInputFiles(tool: "api-request-fuzzer", fuzzOne) } }
#endif
