// The parsed document as plain Swift values: what `LibXML2Document` copies
// out of libxml2's tree, so the XML-RPC reading (XMLRPCDecoding.swift)
// holds no pointer. Attributes and namespaces are dropped (XML-RPC has
// none; Python's xmlrpc.client also reads only local names), comments and
// processing instructions too; CDATA arrives as text.

/// One element: its local name, the line it starts on, what it contains.
struct XMLElement: Equatable {
    var name: String
    var line: Int
    var children: [XMLNode]
}

/// An element's content, in document order.
enum XMLNode: Equatable {
    case element(XMLElement)
    case text(String)
}

extension XMLElement {
    /// The child elements, or `.notXMLRPC` when text other than white
    /// space stands beside them (XML-RPC's structural elements hold only
    /// elements; the white space is xmlrpc.client's line breaks).
    func elementChildren() throws(XMLRPCError) -> [XMLElement] {
        var elements: [XMLElement] = []
        for child in children {
            switch child {
            case .element(let element): elements.append(element)
            case .text(let text):
                guard isXMLWhiteSpace(text) else {
                    throw .notXMLRPC(line: line, reason: "<\(name)> holds text beside its elements")
                }
            }
        }
        return elements
    }

    /// The concatenated text, or `.notXMLRPC` when an element stands inside.
    func textContent() throws(XMLRPCError) -> String {
        var text = ""
        for child in children {
            switch child {
            case .text(let part): text += part
            case .element(let element):
                throw .notXMLRPC(line: element.line, reason: "<\(name)> holds an element <\(element.name)>, not text")
            }
        }
        return text
    }
}

/// XML's white space (XML 1.0 §2.3 `S`): space, tab, CR, LF.
func isXMLWhiteSpace(_ text: String) -> Bool {
    text.utf8.allSatisfy(isXMLWhiteSpaceByte)
}

func isXMLWhiteSpaceByte(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
}

/// `text` without XML white space at either end.
func trimmedXMLWhiteSpace(_ text: String) -> String {
    let bytes = Array(text.utf8)
    guard let first = bytes.firstIndex(where: { !isXMLWhiteSpaceByte($0) }),
          let last = bytes.lastIndex(where: { !isXMLWhiteSpaceByte($0) })
    else { return "" }
    return String(decoding: bytes[first...last], as: UTF8.self)
}
