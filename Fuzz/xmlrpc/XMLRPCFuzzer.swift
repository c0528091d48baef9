// Fuzz target xmlrpc: the XML-RPC decoder (`decodeXMLRPCCall`, libxml2 with
// no DTD and caps) and pyapns' mapping (`pyAPNsCall`), on any
// bytes or on calls built from the input.
//
// Input: [flags][limits][…]. flags bit 0: built (else raw). limits: bit 0
// small caps (depth 12, 60 elements, strings of 80 bytes), else roomy ones.
// - raw: the rest is the request body.
// - built: [method][params count][value…]: a call of provision, notify,
//   feedback or another name, each value built from the input (every
//   XML-RPC type; strings from a table of pyapns-shaped texts, tokens
//   among them, or from the input; structs with names from a table of APNs
//   keys or the input), written with the module's encoder as
//   xmlrpc.client lays out a call.
//
// Checked (a trap on violation): an error describes itself in one line; a
// decoded call keeps within the limits (every text, the depth, the element
// count); a decoded call written again with the encoder decodes to the same
// call; a built call decodes to exactly what was built; pyapns' mapping
// gives either a call or a fault whose text is one line, under 300
// characters and shows no token of the call; a notify has as many payloads
// as tokens, each token lowercase hex of 64 to 200 digits, each payload at
// most 4096 bytes and a JSON object JSONSerialization reads.
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md): there, with
// SWIFTPM_FUZZING defined, libFuzzer's main calls LLVMFuzzerTestOneInput.
// A plain `swift build` makes a replay tool of it instead:
// `xmlrpc-fuzzer <input file>…` runs the same checks on each file.

import APNsCore
import Foundation
import FuzzSupport
import PyAPNs
import RelayCore
import XMLRPC

private let roomy = XMLRPCLimits(maxBodyBytes: 1 << 16, maxDepth: 64, maxElements: 4096, maxStringBytes: 8192)
private let small = XMLRPCLimits(maxBodyBytes: 1 << 16, maxDepth: 12, maxElements: 60, maxStringBytes: 80)
/// For a call written again by the encoder: its layout adds line breaks,
/// so only the caps the first decoding already checked may apply.
private let rewritten = XMLRPCLimits(maxBodyBytes: 1 << 22, maxDepth: 64, maxElements: 1 << 16, maxStringBytes: 1 << 16)

private let token = String(repeating: "0a1b2c3d", count: 8)
private let texts = [
    "myapp", "sandbox", "production", token, token.uppercased(), "0A1B 2C3D " + String(token.dropFirst(8)),
    String(repeating: "ab", count: 100), "zz" + String(token.dropFirst(2)), "",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "/etc/pyapns/cert.pem", "Hello!", "a<&>\"'",
]
private let names = ["aps", "alert", "badge", "sound", "title", "body", "content-available", "category", "x", ""]
private let methods = ["provision", "notify", "feedback", "system.listMethods"]

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    let limits = input.bool() ? small : roomy
    if flags & 1 == 1 {
        let method = methods[Int(input.byte()) % methods.count]
        let count = Int(input.byte() % 5)
        let params = (0..<count).map { _ in value(&input, depth: 0) }
        let built = XMLRPCCall(methodName: method, params: params)
        guard let call = decode(callDocument(built), limits: rewritten) else {
            require(false, "a built call did not decode")
            return 0
        }
        require(call == built, "a built call decoded to another: \(call)")
        checkMapping(call)
    } else {
        let body = input.rest()
        guard let call = decode(body, limits: limits) else { return 0 }
        checkLimits(call, limits)
        let again = decode(callDocument(call), limits: rewritten)
        require(again == call, "a call written again decoded to another")
        checkMapping(call)
    }
    return 0
}

/// The decoded call, or nil after checking the error's description.
private func decode(_ bytes: [UInt8], limits: XMLRPCLimits) -> XMLRPCCall? {
    do {
        return try decodeXMLRPCCall(bytes, limits: limits)
    } catch {
        let text = error.description
        trace("refused: \(text)")
        require(!text.isEmpty && !text.contains("\n") && !text.contains("\r"), "an error of several lines: \(text)")
        return nil
    }
}

/// `call` as a methodCall document, laid out as xmlrpc.client writes one:
/// each parameter is the module's methodResponse encoding of it, cut out.
private func callDocument(_ call: XMLRPCCall) -> [UInt8] {
    let head = "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n"
    let tail = "</param>\n</params>\n</methodResponse>\n"
    var document = "<?xml version='1.0'?>\n<methodCall>\n<methodName>" + xmlText(call.methodName) + "</methodName>\n<params>\n"
    for param in call.params {
        let response = String(decoding: encodeXMLRPCResponse(param), as: UTF8.self)
        require(response.hasPrefix(head) && response.hasSuffix(tail), "the response layout changed")
        document += "<param>\n" + response.dropFirst(head.count).dropLast(tail.count) + "</param>\n"
    }
    return Array((document + "</params>\n</methodCall>\n").utf8)
}

/// A method name as XML text: the encoder's escaping, read off a string value.
private func xmlText(_ text: String) -> String {
    let one = String(decoding: encodeXMLRPCResponse(.string(text)), as: UTF8.self)
    let start = one.range(of: "<string>")!.upperBound
    let end = one.range(of: "</string>", options: .backwards)!.lowerBound
    return String(one[start..<end])
}

private func checkLimits(_ call: XMLRPCCall, _ limits: XMLRPCLimits) {
    require(call.methodName.utf8.count <= limits.maxStringBytes, "a method name past the string limit")
    // The fewest elements: methodCall, methodName, params when there
    // are any, and a <param> each.
    var elements = 2 + (call.params.isEmpty ? 0 : 1) + call.params.count
    for param in call.params { walk(param, depth: 4, limits: limits, elements: &elements) }
    require(elements <= limits.maxElements, "\(elements) elements under a limit of \(limits.maxElements)")
}

/// Counts the fewest elements `value` needs and checks its texts and depth
/// (`depth`: the `<value>` element's).
private func walk(_ value: XMLRPCValue, depth: Int, limits: XMLRPCLimits, elements: inout Int) {
    require(depth <= limits.maxDepth, "a value at depth \(depth) under a limit of \(limits.maxDepth)")
    elements += 1
    switch value {
    case .string(let text):
        require(text.utf8.count <= limits.maxStringBytes, "a string past the limit")
    case .structure(let members):
        elements += 1 + 2 * members.count
        for member in members {
            require(member.name.utf8.count <= limits.maxStringBytes, "a member name past the limit")
            walk(member.value, depth: depth + 3, limits: limits, elements: &elements)
        }
    case .array(let items):
        elements += 2
        for item in items { walk(item, depth: depth + 3, limits: limits, elements: &elements) }
    case .int, .boolean, .double, .dateTime, .base64:
        elements += 1
    case .nil:
        elements += 1
    }
}

private func checkMapping(_ call: XMLRPCCall) {
    // What could be a device token: 64 or more hex digits (spaces aside).
    let tokens = call.params.flatMap(strings).filter { text in
        text.utf8.filter { $0 != 0x20 }.count >= 64
            && text.utf8.allSatisfy { $0 == 0x20 || (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
    }
    do {
        let mapped = try pyAPNsCall(call)
        trace("mapped: \(call.methodName)")
        if case .notify(let notify) = mapped {
            require(notify.tokens.count == notify.payloads.count, "tokens and payloads differ in number")
            for token in notify.tokens {
                require((64...200).contains(token.utf8.count) && token.utf8.count % 2 == 0
                    && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) },
                    "a token that is not lowercase hex: \(describe(token.utf8))")
            }
            for payload in notify.payloads {
                require(payload.count <= apnsMaxPayloadBytes, "a payload of \(payload.count) bytes")
                require((try? JSONSerialization.jsonObject(with: Data(payload))) is [String: Any],
                        "a payload that is not a JSON object: \(describe(payload))")
            }
        }
    } catch {
        let text = error.faultString
        trace("fault \(error.code): \(text)")
        require(!text.isEmpty && text.count < 300 && !text.contains("\n"), "a bad fault string: \(text)")
        for token in tokens { require(!containsBytes(text, token), "a fault shows a token: \(text)") }
        require(!error.response.isEmpty, "an empty fault response")
    }
}

private func strings(_ value: XMLRPCValue) -> [String] {
    switch value {
    case .string(let text): [text]
    case .array(let items): items.flatMap(strings)
    case .structure(let members): members.flatMap { strings($0.value) }
    default: []
    }
}

// MARK: - Built values

private func value(_ input: inout FuzzInput, depth: Int) -> XMLRPCValue {
    let kind = input.byte() % (depth < 4 ? 11 : 9)
    switch kind {
    case 0: return .int(Int(truncatingIfNeeded: input.uint16() | input.uint16() << 16 | input.uint16() << 32 | input.uint16() << 48))
    case 1: return .boolean(input.bool())
    case 2: return .string(texts[Int(input.byte()) % texts.count])
    case 3: return .string(text(input.lengthPrefixed(limit: 300)))
    case 4:
        let bits = UInt64(input.uint16()) | UInt64(input.uint16()) << 16 | UInt64(input.uint16()) << 32 | UInt64(input.uint16()) << 48
        let number = Double(bitPattern: bits)
        return .double(number.isFinite ? number : Double(input.uint16()) / 8)
    case 5: return .dateTime(XMLRPCDateTime(unixSeconds: (input.uint16() | input.uint16() << 16 | input.uint16() << 32) - (1 << 40)))
    case 6: return .base64(input.lengthPrefixed(limit: 100))
    case 7: return .nil
    case 8: return .string(token)
    case 9:
        var members: [XMLRPCMember] = []
        for _ in 0..<Int(input.byte() % 5) {
            let name = input.bool() ? names[Int(input.byte()) % names.count] : text(input.lengthPrefixed(limit: 20))
            let member = value(&input, depth: depth + 1)
            // Names are unique (the decoder refuses a name twice).
            if !members.contains(where: { $0.name == name }) { members.append(XMLRPCMember(name: name, value: member)) }
        }
        return .structure(members)
    default:
        return .array((0..<Int(input.byte() % 5)).map { _ in value(&input, depth: depth + 1) })
    }
}

/// Input bytes as text XML 1.0 can carry (controls other than tab, LF and
/// CR, U+FFFE and U+FFFF become `?`): what a parsed document can hold.
private func text(_ bytes: [UInt8]) -> String {
    String(String(decoding: bytes, as: UTF8.self).unicodeScalars.map { scalar -> Character in
        (scalar.value < 0x20 && scalar != "\t" && scalar != "\n" && scalar != "\r") || scalar.value == 0xFFFE
            || scalar.value == 0xFFFF ? "?" : Character(scalar)
    })
}

// The entry points: see the top of the file.
#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzXMLRPC(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum XMLRPCReplay {
    static func main() { replayInputFiles(tool: "xmlrpc-fuzzer", fuzzOne) }
}
#endif
