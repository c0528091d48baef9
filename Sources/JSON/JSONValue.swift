// A JSON document as the strict parser reads it: numbers kept as the sender
// wrote them and objects in the sender's order, so the provider API's custom
// `data` goes to APNs exactly as it came (ints stay ints, 1.5 stays 1.5).

/// One JSON value (RFC 8259 §3). Numbers are their text, checked against
/// the grammar of §6 but never converted; objects keep their members in
/// order, and the parser has refused duplicate names.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's text, as written (RFC 8259 §6 grammar).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The member called `name`, when this is an object that has one.
    @inlinable
    public subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.value
    }

    /// What the value is, for error messages: "a string", "an object", ….
    public var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Appends the value as compact JSON: strings escaped by the one
    /// escaping (JSONEscaping.swift, RFC 8259 §7), numbers as written.
    /// Inlinable, as the writers below: the provider API writes every
    /// payload's custom `data` with them.
    @inlinable
    public func appendJSON(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): appendJSONString(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.appendJSON(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            appendJSONObject(members.lazy.map { ($0.name, $0.value) }, to: &output)
        }
    }
}

/// One name and value of a JSON object.
public struct JSONMember: Sendable, Equatable {
    public var name: String
    public var value: JSONValue

    public init(name: String, value: JSONValue) { (self.name, self.value) = (name, value) }
}

/// Appends `{"name":value,…}` for members given in order.
@inlinable
public func appendJSONObject(_ members: some Sequence<(String, JSONValue)>, to output: inout [UInt8]) {
    output.append(UInt8(ascii: "{"))
    var first = true
    for (name, value) in members {
        if !first { output.append(UInt8(ascii: ",")) }
        first = false
        appendJSONString(name, to: &output)
        output.append(UInt8(ascii: ":"))
        value.appendJSON(to: &output)
    }
    output.append(UInt8(ascii: "}"))
}
