// A JSON value as Go's encoder writes it after gorush decoded it into
// `any`: gorush's `convertDataToStringMap` (notify/notification_fcm.go)
// turns each non-string `data` value into this text, since FCM's data
// holds strings only. Go decodes numbers into float64 and objects into
// maps, so numbers come back in float64's shortest form and object keys
// sorted by their bytes. Strings go through the relay's one escaping
// (RFC 8259 §7), which leaves `<`, `>`, `&` as they are where Go writes
// `\u003c`…: the same value for any JSON reader.

import JSON

/// `value` as Go's `json.Marshal` writes the `any` it decodes to.
func goJSONText(_ value: JSONValue) -> String {
    var output: [UInt8] = []
    appendGoJSON(value, to: &output)
    return String(decoding: output, as: UTF8.self)
}

private func appendGoJSON(_ value: JSONValue, to output: inout [UInt8]) {
    switch value {
    case .null, .bool, .string: value.appendJSON(to: &output)
    case .number(let text): output.append(contentsOf: goFloat64Text(text).utf8)
    case .array(let elements):
        output.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            appendGoJSON(element, to: &output)
        }
        output.append(UInt8(ascii: "]"))
    case .object(let members):
        output.append(UInt8(ascii: "{"))
        for (index, member) in sortedByBytes(members).enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            appendJSONString(member.name, to: &output)
            output.append(UInt8(ascii: ":"))
            appendGoJSON(member.value, to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }
}

/// Members in the order Go writes a map's keys: by their UTF-8 bytes.
func sortedByBytes(_ members: [JSONMember]) -> [JSONMember] {
    members.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
}

/// A JSON number (already in range: the decoder refuses what float64
/// cannot hold) as Go's encoder writes a float64: the shortest digits
/// that read back, in plain notation unless below 1e-6 or from 1e21 on,
/// where it is `d.ddde±XX` with `e-0X` shortened to `e-X`.
func goFloat64Text(_ text: String) -> String {
    guard let value = Double(text), value.isFinite else { return text }
    if value == 0 { return value.sign == .minus ? "-0" : "0" }
    let (digits, pointAt) = shortestDigits(value.magnitude)
    let sign = value < 0 ? "-" : ""
    let magnitude = value.magnitude
    if magnitude < 1e-6 || magnitude >= 1e21 {
        let exponent = pointAt - 1
        let mantissa = digits.count > 1 ? digits.prefix(1) + "." + digits.dropFirst() : digits
        let exponentText = exponent < 0 ? "-" + String(-exponent) : "+" + (exponent < 10 ? "0" : "") + String(exponent)
        return sign + mantissa + "e" + exponentText
    }
    if pointAt <= 0 { return sign + "0." + String(repeating: "0", count: -pointAt) + digits }
    if pointAt >= digits.count { return sign + digits + String(repeating: "0", count: pointAt - digits.count) }
    return sign + digits.prefix(pointAt) + "." + digits.dropFirst(pointAt)
}

/// The shortest round-trip digits of a positive finite `value` (Swift's
/// `description` computes them as Go's `strconv` does) without leading or
/// trailing zeros, and where the decimal point goes: value = 0.digits × 10^pointAt.
private func shortestDigits(_ value: Double) -> (digits: String, pointAt: Int) {
    let text = value.description
    let parts = text.split(separator: "e", maxSplits: 1)
    let exponent = parts.count == 2 ? Int(parts[1]) ?? 0 : 0
    let mantissa = parts[0]
    let integerCount = mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count
    var digits = Substring(mantissa.filter { $0 != "." })
    var pointAt = integerCount + exponent
    while digits.first == "0" {
        digits = digits.dropFirst()
        pointAt -= 1
    }
    while digits.last == "0" { digits = digits.dropLast() }
    return (String(digits), pointAt)
}
