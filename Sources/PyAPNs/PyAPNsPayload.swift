// A pyapns notification dictionary as the APNs JSON payload. pyapns wrote
// `json.dumps(p, separators=(',',':'), ensure_ascii=False)` (server.py,
// `encode_notifications`): compact, UTF-8 as is. Here the same, with the
// struct's member order kept and every type kept exactly: ints as
// integers, booleans as true/false (never 1/0), doubles as numbers,
// nil as null. dateTime and base64 have no JSON form (pyapns' json failed
// on them too): a fault.

import APNsCore
import JSON
import RelayCore
import XMLRPC

/// The payload of notify's notification at `index`, at most 4096 bytes.
func apnsPayload(_ notification: XMLRPCValue, index: Int) throws(PyAPNsFault) -> [UInt8] {
    guard case .structure = notification else {
        throw .badArguments("notify: notification at index \(index) must be a struct, not \(notification.typeName)")
    }
    var output: [UInt8] = []
    if let unwritable = appendJSON(notification, to: &output) {
        throw .badArguments("notify: notification at index \(index) holds a \(unwritable) value, which JSON cannot carry")
    }
    guard output.count <= apnsMaxPayloadBytes else {
        throw .badArguments("notify: notification at index \(index) makes a \(output.count)-byte APNs payload "
            + "(max \(apnsMaxPayloadBytes))")
    }
    return output
}

/// Appends `value` as JSON (RFC 8259); returns the type name of a value
/// JSON cannot carry instead, leaving `output` partly written.
private func appendJSON(_ value: XMLRPCValue, to output: inout [UInt8]) -> String? {
    switch value {
    case .int(let number):
        output += Array(String(number).utf8)
    case .boolean(let flag):
        output += Array((flag ? "true" : "false").utf8)
    case .double(let number):
        // Finite (the decoder refuses others); Swift's shortest
        // round-trip form, like Python's repr: 1.5, 100.0, 1e+22.
        guard number.isFinite else { return value.typeName }
        output += Array(number.description.utf8)
    case .string(let text):
        appendJSONString(text, to: &output)
    case .nil:
        output += Array("null".utf8)
    case .structure(let members):
        output.append(UInt8(ascii: "{"))
        for (position, member) in members.enumerated() {
            if position > 0 { output.append(UInt8(ascii: ",")) }
            appendJSONString(member.name, to: &output)
            output.append(UInt8(ascii: ":"))
            if let unwritable = appendJSON(member.value, to: &output) { return unwritable }
        }
        output.append(UInt8(ascii: "}"))
    case .array(let items):
        output.append(UInt8(ascii: "["))
        for (position, item) in items.enumerated() {
            if position > 0 { output.append(UInt8(ascii: ",")) }
            if let unwritable = appendJSON(item, to: &output) { return unwritable }
        }
        output.append(UInt8(ascii: "]"))
    case .dateTime, .base64:
        return value.typeName
    }
    return nil
}
