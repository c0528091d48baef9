// A methodCall read from libxml2's tree (the specification at
// xmlrpc.com/spec.md, "Request example"): <methodCall><methodName>…
// </methodName><params><param><value>…</value></param>…</params>
// </methodCall>, params optional. Tolerant where xmlrpc.client is (white
// space between elements, around numbers; a bare <value>text</value> is a
// string), strict where a value could be misread.

import Foundation

/// A decoded XML-RPC call.
public struct XMLRPCCall: Sendable, Equatable {
    public var methodName: String
    public var params: [XMLRPCValue]

    public init(methodName: String, params: [XMLRPCValue]) { (self.methodName, self.params) = (methodName, params) }
}

/// Decodes an XML-RPC methodCall from a request body, within `limits`.
public func decodeXMLRPCCall(_ bytes: [UInt8], limits: XMLRPCLimits) throws(XMLRPCError) -> XMLRPCCall {
    let root = try parseXMLDocument(bytes, limits: limits)
    guard root.name == "methodCall" else {
        throw .notXMLRPC(line: root.line, reason: "the root element is <\(shown(root.name))>, not <methodCall>")
    }
    let parts = try root.elementChildren()
    guard let nameElement = parts.first, nameElement.name == "methodName" else {
        throw .notXMLRPC(line: root.line, reason: "<methodCall> does not start with <methodName>")
    }
    let methodName = trimmedXMLWhiteSpace(try nameElement.textContent())
    guard !methodName.isEmpty else { throw .notXMLRPC(line: nameElement.line, reason: "<methodName> is empty") }
    var params: [XMLRPCValue] = []
    switch parts.count {
    case 1: break
    case 2 where parts[1].name == "params":
        for param in try parts[1].elementChildren() {
            guard param.name == "param" else {
                throw .notXMLRPC(line: param.line, reason: "<params> holds <\(shown(param.name))>, not <param>")
            }
            params.append(try decodeValue(onlyValue(in: param)))
        }
    default:
        let extra = parts[1]
        throw .notXMLRPC(line: extra.line, reason: "<methodCall> holds <\(shown(extra.name))> where only <params> may follow")
    }
    return XMLRPCCall(methodName: methodName, params: params)
}

/// The one `<value>` of a `<param>` or struct member.
private func onlyValue(in element: XMLElement) throws(XMLRPCError) -> XMLElement {
    let children = try element.elementChildren()
    guard children.count == 1, children[0].name == "value" else {
        throw .notXMLRPC(line: element.line, reason: "<\(element.name)> must hold exactly one <value>")
    }
    return children[0]
}

/// A `<value>` element's value.
private func decodeValue(_ value: XMLElement) throws(XMLRPCError) -> XMLRPCValue {
    let hasElement = value.children.contains { if case .element = $0 { true } else { false } }
    // "If no type is indicated, the type is string" (the specification).
    guard hasElement else { return .string(try value.textContent()) }
    let typed = try value.elementChildren()
    guard typed.count == 1 else {
        throw .notXMLRPC(line: value.line, reason: "<value> holds \(typed.count) elements, not one type")
    }
    let element = typed[0]
    switch element.name {
    case "int", "i4", "i8":
        let text = trimmedXMLWhiteSpace(try element.textContent())
        guard let number = Int(text) else {
            throw .invalidValue(line: element.line, type: element.name, reason: "not a whole number in 64 bits")
        }
        return .int(number)
    case "boolean":
        switch trimmedXMLWhiteSpace(try element.textContent()) {
        case "0": return .boolean(false)
        case "1": return .boolean(true)
        default: throw .invalidValue(line: element.line, type: "boolean", reason: "not 0 or 1")
        }
    case "string":
        return .string(try element.textContent())
    case "double":
        let text = trimmedXMLWhiteSpace(try element.textContent())
        guard isDecimalNumber(text), let number = Double(text), number.isFinite else {
            throw .invalidValue(line: element.line, type: "double", reason: "not a finite decimal number")
        }
        return .double(number)
    case "dateTime.iso8601":
        guard let dateTime = XMLRPCDateTime(text: trimmedXMLWhiteSpace(try element.textContent())) else {
            throw .invalidValue(line: element.line, type: element.name, reason: "not a date and time as YYYYMMDDTHH:MM:SS")
        }
        return .dateTime(dateTime)
    case "base64":
        // Line breaks and other white space are allowed inside, as
        // xmlrpc.client writes them every 76 characters.
        let text = try element.textContent().utf8.filter { !isXMLWhiteSpaceByte($0) }
        guard let data = Data(base64Encoded: Data(text)) else {
            throw .invalidValue(line: element.line, type: "base64", reason: "not base64")
        }
        return .base64(Array(data))
    case "struct":
        return .structure(try decodeMembers(of: element))
    case "array":
        let parts = try element.elementChildren()
        guard parts.count == 1, parts[0].name == "data" else {
            throw .notXMLRPC(line: element.line, reason: "<array> must hold exactly one <data>")
        }
        var items: [XMLRPCValue] = []
        for item in try parts[0].elementChildren() {
            guard item.name == "value" else {
                throw .notXMLRPC(line: item.line, reason: "<data> holds <\(shown(item.name))>, not <value>")
            }
            items.append(try decodeValue(item))
        }
        return .array(items)
    case "nil":
        guard element.children.allSatisfy({ if case .text(let text) = $0 { isXMLWhiteSpace(text) } else { false } }) else {
            throw .invalidValue(line: element.line, type: "nil", reason: "not empty")
        }
        return .nil
    default:
        throw .notXMLRPC(line: element.line, reason: "<\(shown(element.name))> is not an XML-RPC type")
    }
}

/// A struct's members, in order. A name given twice is refused: Python
/// kept the last silently, and a notification built from such a struct
/// would not say what its sender meant.
private func decodeMembers(of structure: XMLElement) throws(XMLRPCError) -> [XMLRPCMember] {
    var members: [XMLRPCMember] = []
    var names = Set<String>()
    for member in try structure.elementChildren() {
        let parts = try member.elementChildren()
        guard member.name == "member", parts.count == 2, parts[0].name == "name", parts[1].name == "value" else {
            throw .notXMLRPC(line: member.line, reason: "a <struct> holds <member> elements of a <name> and a <value>")
        }
        let name = try parts[0].textContent()
        guard names.insert(name).inserted else {
            throw .invalidValue(line: member.line, type: "struct", reason: "a member name appears twice")
        }
        members.append(XMLRPCMember(name: name, value: try decodeValue(parts[1])))
    }
    return members
}

/// The specification's double: an optional sign, digits, an optional
/// fraction; xmlrpc.client writes Python's repr, so an exponent too.
/// Swift's `Double(_:)` alone would also read "inf", "nan" and hex floats.
private func isDecimalNumber(_ text: String) -> Bool {
    var sawDigit = false
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): sawDigit = true
        case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): continue
        default: return false
        }
    }
    return sawDigit
}

/// An element name as a message shows it: at most 40 characters.
func shown(_ name: String) -> String {
    name.count <= 40 ? name : String(name.prefix(40)) + "…"
}
