// Fuzz target vapid: VAPID's header forms, the JWT and the verdict
// (`vapidAuthentication(in:)`, `checkVAPID`) with a fake crypto
// on arbitrary headers.
//
// Input: [flags][now: 4 bytes, signed, added to 1,899,990,000][audience][key
// hash][verify][…]. flags: bit 0 built headers (else raw text), bit 1 check
// again with a memory of verified JWTs. audience % 5: a fixed origin (0
// py_vapid's seeds', 1–3 others and spellings) or 4: a length-prefixed text.
// key hash even: the fake hash of the key the headers carry; odd: 32 input
// bytes. verify bit 0: what the fake ES256 verification answers.
// - raw: the rest is header lines `name: value` split at `\n`.
// - built: a JWT from parts (a header and claims from tables or the input,
//   `exp` relative to now in several forms, a signature of any length, each
//   part padded or not, either alphabet) and a key, in either header form
//   or both, in any scheme case, with separators and repeats chosen.
//
// Checked (a trap on violation): a reason is one line, not empty, and shows
// neither the JWT nor the key; 401 exactly when the headers carry no VAPID
// authentication, a header-level 403 exactly when they are malformed;
// accepted only when the key's fake hash is the endpoint's, the fake verify
// said yes, and `aud` and `exp` (read again with JSONSerialization) fit;
// the same input gives the same verdict twice, and a remembered JWT
// (accepted or a 503 past its signature) keeps its verdict without
// another verification.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md): there, with
// SWIFTPM_FUZZING defined, libFuzzer's main calls LLVMFuzzerTestOneInput.
// A plain `swift build` makes a replay tool of it instead:
// `vapid-fuzzer <input file>…` runs the same checks on each file.

import Base64URL
import Foundation
import FuzzSupport
import HTTPCore
import RelayCore
import VAPID

private let baseNow = 1_899_990_000
private let audiences = ["https://relay.example:8443", "https://relay.example", "http://[::1]:8080",
                         "HTTPS://Relay.Example:443/"]

/// The fake SHA-256: the key's x coordinate.
private func fakeHash(_ key: [UInt8]) -> [UInt8] { Array(key.dropFirst().prefix(32)) }

/// What the fake verification was asked and answered.
private final class VerifyRecord: @unchecked Sendable {
    var answer = false
    var calls = 0
    var saidYes = false
}

private func crypto(_ record: VerifyRecord) -> VAPIDCrypto {
    VAPIDCrypto(sha256: fakeHash) { key, _, signature in
        record.calls += 1
        require(key.count == 65 && key[0] == 0x04, "verify asked with a key that is not an uncompressed point")
        require(signature.count == 64, "verify asked with a \(signature.count)-byte signature")
        if record.answer { record.saidYes = true }
        return record.answer
    }
}

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    let nowDelta = Int(Int32(truncatingIfNeeded: UInt32(input.byte()) | UInt32(input.byte()) << 8
        | UInt32(input.byte()) << 16 | UInt32(input.byte()) << 24))
    let now = baseNow + nowDelta
    let audienceChoice = Int(input.byte() % 5)
    let audience = audienceChoice < audiences.count
        ? audiences[audienceChoice] : String(decoding: input.bytes(Int(input.byte() % 128)), as: UTF8.self)
    let hashFromInput = input.bool()
    let inputHash = hashFromInput ? input.bytes(32) : []
    let record = VerifyRecord()
    record.answer = input.bool()

    let headers = flags & 1 == 1 ? buildHeaders(&input, now: now) : rawHeaders(input.rest())
    let parsed = vapidAuthentication(in: headers)
    var keyHash = inputHash
    if !hashFromInput, case .present(let authentication) = parsed { keyHash = fakeHash(authentication.publicKey) }

    let verdict = checkVAPID(headers, keyHash: keyHash, audience: audience, now: now, crypto: crypto(record))
    trace("\(shape(of: parsed)) → \(verdict)")
    checkVerdict(verdict, parsed: parsed, keyHash: keyHash, audience: audience, now: now, record: record)

    // Deterministic: the same input, the same verdict.
    let again = VerifyRecord()
    again.answer = record.answer
    require(checkVAPID(headers, keyHash: keyHash, audience: audience, now: now, crypto: crypto(again)) == verdict,
            "a second check differs")

    if flags & 2 == 2 {
        var memory = VAPIDVerifiedTokens(capacity: 4)
        let first = VerifyRecord()
        first.answer = record.answer
        require(checkVAPID(headers, keyHash: keyHash, audience: audience, now: now, crypto: crypto(first),
                           verifiedTokens: &memory) == verdict, "the check with a memory differs")
        // Past the signature and unexpired, the JWT is remembered: a crypto
        // that refuses everything is not asked, and the verdict stands.
        var remembered = false
        switch verdict {
        case .accepted, .unverifiable(.tooFarAhead, _): remembered = true
        case .unverifiable(.audience, _):
            if case .present(let authentication) = parsed, let claims = otherParserClaims(authentication.token) {
                remembered = claims.exp > Double(now)
            }
        default: break
        }
        let refusing = VerifyRecord()
        let second = checkVAPID(headers, keyHash: keyHash, audience: audience, now: now, crypto: crypto(refusing),
                                verifiedTokens: &memory)
        if remembered {
            require(second == verdict && refusing.calls == 0, "a remembered JWT was verified again or changed")
        }
        require(memory.count <= memory.capacity, "the memory grew past its capacity")
    }
    return 0
}

private func checkVerdict(_ verdict: VAPIDVerdict, parsed: VAPIDHeaders, keyHash: [UInt8], audience: String,
                          now: Int, record: VerifyRecord) {
    var secrets: [String] = []
    if case .present(let authentication) = parsed {
        secrets = [authentication.token, base64URLEncode(authentication.publicKey)].filter { $0.utf8.count >= 65 }
    }
    switch verdict {
    case .accepted:
        guard case .present(let authentication) = parsed else {
            require(false, "accepted without VAPID authentication")
            return
        }
        require(fakeHash(authentication.publicKey) == keyHash, "accepted under another key's hash")
        require(record.saidYes, "accepted without a verification that said yes")
        checkWindow(authentication.token, audience: audience, now: now)
    case .unauthenticated(let reason):
        require(parsed == .absent, "401 for headers that carry VAPID authentication")
        checkReason(reason, secrets: secrets)
    case .forbidden(let reason):
        require(parsed != .absent, "403 without VAPID authentication")
        if case .malformed(let headerReason) = parsed { require(reason == headerReason, "another reason than the headers'") }
        checkReason(reason, secrets: secrets)
    case .unverifiable(_, let reason):
        require(record.saidYes, "a 503 for a JWT whose signature was not verified")
        checkReason(reason, secrets: secrets)
    }
}

/// What the headers held, without the JWT and the key.
private func shape(of parsed: VAPIDHeaders) -> String {
    guard case .present(let authentication) = parsed else { return "\(parsed)" }
    return "present(JWT of \(authentication.token.utf8.count) bytes)"
}

private func checkReason(_ reason: String, secrets: [String]) {
    require(!reason.isEmpty, "an empty reason")
    require(!reason.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }), "a reason of several lines: \(reason)")
    for secret in secrets { require(!containsBytes(reason, secret), "a reason shows the JWT or the key: \(reason)") }
}

/// A JWT's `aud` and `exp` (rounded down), read with another parser than
/// the module's (JSONSerialization). What JSONDecoder tolerates in strings
/// and JSONSerialization refuses (found by the fuzzer) is made standard
/// first: bytes that are not UTF-8 repaired, raw control characters
/// escaped. Lenient is right for the relay: such a JWT was signed by the
/// endpoint's key.
private func otherParserClaims(_ token: String) -> (aud: String, exp: Double)? {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let claimsBytes = try? base64URLDecode(parts[1]),
          let claims = (try? JSONSerialization.jsonObject(
              with: Data(String(decoding: controlsEscapedInStrings(claimsBytes), as: UTF8.self).utf8)))
              as? [String: Any],
          let aud = claims["aud"] as? String, let exp = claims["exp"] as? NSNumber else { return nil }
    return (aud, exp.doubleValue.rounded(.down))
}

/// JSON text with the raw control characters inside its strings written as
/// `\u00XX` escapes (RFC 8259 §7 requires them escaped).
private func controlsEscapedInStrings(_ bytes: [UInt8]) -> [UInt8] {
    var output: [UInt8] = []
    var inString = false, escaped = false
    for byte in bytes {
        if inString && !escaped && byte < 0x20 {
            output += Array(String(format: "\\u%04x", Int(byte)).utf8)
            continue
        }
        output.append(byte)
        if escaped {
            escaped = false
        } else if inString && byte == UInt8(ascii: "\\") {
            escaped = true
        } else if byte == UInt8(ascii: "\"") {
            inString.toggle()
        }
    }
    return output
}

/// An accepted JWT's `aud` and `exp`, read again with another parser, fit
/// the relay's origin and the time window.
private func checkWindow(_ token: String, audience: String, now: Int) {
    // JSONDecoder (the module's) tolerates what JSONSerialization (this
    // oracle) refuses in claims the relay does not read (bytes that are not
    // UTF-8 next to raw control characters, found by this fuzzer in `sub`);
    // the repairs above cover most of it; what is left cannot be
    // cross-checked here, and `aud`/`exp` are still checked by the module.
    guard let (aud, expiry) = otherParserClaims(token) else { return }
    require(vapidOrigin(of: aud) != nil && vapidOrigin(of: aud) == vapidOrigin(of: audience),
            "accepted aud \(describe(aud.utf8)) for \(describe(audience.utf8))")
    require(expiry > Double(now) && expiry <= Double(now + 86_400 + 300), "accepted exp \(expiry) at \(now)")
}

// MARK: - Headers

private func rawHeaders(_ bytes: [UInt8]) -> HTTPHeaders {
    var headers = HTTPHeaders()
    for line in bytes.split(separator: UInt8(ascii: "\n")) {
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let value = colon == line.endIndex ? line[colon...] : line[(colon + 1)...]
        headers.append(name: String(decoding: line[..<colon], as: UTF8.self),
                       value: String(decoding: trimmingOWS(value), as: UTF8.self))
    }
    return headers
}

private let jwtHeaders = [#"{"typ":"JWT","alg":"ES256"}"#, #"{"alg":"ES256"}"#, #"{"alg":"none"}"#,
                          #"{"alg":"ES256","crit":["b64"]}"#, "[]"]
private let schemes = ["vapid", "VAPID", "Vapid", "WebPush", "webpush", "Bearer", ""]

private func buildHeaders(_ input: inout FuzzInput, now: Int) -> HTTPHeaders {
    let form = input.byte()
    let header = choose(jwtHeaders, &input)
    let audChoice = Int(input.byte() % 6)
    let aud = audChoice < audiences.count ? "\"" + audiences[audChoice] + "\""
        : audChoice == 4 ? "\"" + quotedContent(String(decoding: input.lengthPrefixed(limit: 100), as: UTF8.self)) + "\"" : "443"
    let delta = Int(Int32(truncatingIfNeeded: input.uint16() | input.uint16() << 16))
    let exp: String
    switch input.byte() % 6 {
    case 0: exp = "\(now + delta)"
    case 1: exp = "\(now + delta).5"
    case 2: exp = "\"\(now + delta)\""
    case 3: exp = "\(now + delta)e0"
    case 4: exp = String(decoding: input.lengthPrefixed(limit: 40), as: UTF8.self)
    default: exp = "\(now + 3600)"
    }
    let claims = input.bool() ? #"{"aud":\#(aud),"exp":\#(exp),"sub":"mailto:a@b.example"}"# : #"{"exp":\#(exp),"aud":\#(aud)}"#
    let signatureLength = input.bool() ? 64 : Int(input.byte())
    let signature = input.bytes(signatureLength)
    let encoding = input.byte()
    let token = encoded(Array(header.utf8), encoding & 1) + "." + encoded(Array(claims.utf8), encoding >> 1 & 1)
        + "." + encoded(signature, encoding >> 2 & 1)
    let keyLength = input.bool() ? 65 : Int(input.byte() % 70)
    let key = [0x04] + input.bytes(max(0, keyLength - 1))
    let keyText = encoded(key, encoding >> 3 & 1)
    let scheme = choose(schemes, &input)
    let separator = choose([", ", ",", ";", " , "], &input)

    var headers = HTTPHeaders()
    switch form % 4 {
    case 0:
        headers.append(name: "Authorization", value: "\(scheme) t=\(token)\(separator)k=\(keyText)")
    case 1:
        headers.append(name: "Authorization", value: "\(scheme) \(token)")
        headers.append(name: "Crypto-Key", value: "dh=BAAA;p256ecdsa=\(keyText)")
    case 2:
        headers.append(name: "Authorization", value: "\(scheme) t=\(token)\(separator)k=\(keyText)")
        headers.append(name: "Crypto-Key", value: "p256ecdsa=\(keyText)")
    default:
        headers.append(name: "Authorization", value: String(decoding: input.lengthPrefixed(limit: 300), as: UTF8.self))
        headers.append(name: "Crypto-Key", value: "p256ecdsa=\(keyText)")
    }
    if form & 4 != 0 { headers.append(name: "Crypto-Key", value: "p256ecdsa=\(encoded(key, 0))") }
    if form & 8 != 0 { headers.append(name: "Authorization", value: "vapid k=\(keyText)") }
    return headers
}

private func choose(_ table: [String], _ input: inout FuzzInput) -> String {
    let index = Int(input.byte())
    return index < table.count ? table[index] : table[index % table.count]
}

/// base64url, or (mode 1) padded standard base64.
private func encoded(_ bytes: [UInt8], _ mode: UInt8) -> String {
    let text = base64URLEncode(bytes)
    guard mode == 1 else { return text }
    let standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
    return standard + String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (see the top)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVAPID(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum VAPIDReplay { static func main() { replayInputFiles(tool: "vapid-fuzzer", fuzzOne) } }
#endif
