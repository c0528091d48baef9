// methodResponse documents: one value, or a fault (xmlrpc.com/spec.md,
// "Response example", "Fault example"), laid out byte for byte as Python's
// xmlrpc.client `dumps(…, methodresponse=True)` writes them (base64 aside,
// which it breaks into lines), which is what Twisted, pyapns'
// host, sent. Written by hand rather than with libxml2's xmlTextWriter: the
// shape is fixed and small, escaping is the one hazard (one function
// below), and it keeps the encoders free of C.

import Foundation

/// A methodResponse carrying `value` (`.nil` for pyapns' provision and
/// notify, as Twisted's server answers None with allowNone).
public func encodeXMLRPCResponse(_ value: XMLRPCValue) -> [UInt8] {
    var output = "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n"
    appendValue(value, to: &output)
    output += "</param>\n</params>\n</methodResponse>\n"
    return Array(output.utf8)
}

/// A methodResponse carrying a fault: a struct of `faultCode` (int) and
/// `faultString` (string), as the specification requires.
public func encodeXMLRPCFault(code: Int, faultString: String) -> [UInt8] {
    var output = "<?xml version='1.0'?>\n<methodResponse>\n<fault>\n"
    appendValue(.structure([XMLRPCMember(name: "faultCode", value: .int(code)),
                            XMLRPCMember(name: "faultString", value: .string(faultString))]), to: &output)
    output += "</fault>\n</methodResponse>\n"
    return Array(output.utf8)
}

private func appendValue(_ value: XMLRPCValue, to output: inout String) {
    output += "<value>"
    switch value {
    case .int(let number):
        // <int> is 32-bit (the specification); larger numbers as <i8>,
        // which xmlrpc.client reads.
        let tag = Int32(exactly: number) == nil ? "i8" : "int"
        output += "<\(tag)>\(number)</\(tag)>"
    case .boolean(let flag):
        output += "<boolean>\(flag ? 1 : 0)</boolean>"
    case .string(let text):
        output += "<string>" + escapedXMLText(text) + "</string>"
    case .double(let number):
        output += "<double>\(number.isFinite ? "\(number)" : "0.0")</double>"
    case .dateTime(let dateTime):
        output += "<dateTime.iso8601>\(dateTime.text)</dateTime.iso8601>"
    case .base64(let bytes):
        output += "<base64>" + Data(bytes).base64EncodedString() + "</base64>"
    case .structure(let members):
        output += "<struct>\n"
        for member in members {
            output += "<member>\n<name>" + escapedXMLText(member.name) + "</name>\n"
            appendValue(member.value, to: &output)
            output += "</member>\n"
        }
        output += "</struct>"
    case .array(let items):
        output += "<array><data>\n"
        for item in items { appendValue(item, to: &output) }
        output += "</data></array>"
    case .nil:
        // xmlrpc.client writes this one without a line break after it.
        output += "<nil/></value>"
        return
    }
    output += "</value>\n"
}

/// `text` as XML character data (XML 1.0 §2.4): `&`, `<` and `>` escaped,
/// CR as a reference (a parser would turn a raw CR into LF, §2.11), and the
/// characters XML 1.0 cannot carry at all (§2.2: controls other than tab,
/// LF and CR; U+FFFE, U+FFFF) replaced by U+FFFD, so the document is
/// always well-formed.
func escapedXMLText(_ text: String) -> String {
    var output = ""
    output.reserveCapacity(text.utf8.count)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "&": output += "&amp;"
        case "<": output += "&lt;"
        case ">": output += "&gt;"
        case "\r": output += "&#13;"
        case "\t", "\n": output.unicodeScalars.append(scalar)
        case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": output += "\u{FFFD}"
        default: output.unicodeScalars.append(scalar)
        }
    }
    return output
}
