// Why a body is not an XML-RPC call this relay will read. The texts are
// one line, name the place (line, element) and never repeat the body's
// text: an XML-RPC body carries certificates and notification payloads.

/// A body refused by `decodeXMLRPCCall`.
public enum XMLRPCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The body is larger than `XMLRPCLimits.maxBodyBytes`.
    case bodyTooLarge(bytes: Int, limit: Int)
    /// The body is empty.
    case emptyBody
    /// The document has a document type declaration: refused before its
    /// internal subset is read, so no entity is ever declared or expanded
    /// (XXE, billion laughs).
    case doctypeRefused
    /// libxml2 found the document not well-formed (or hit one of its own
    /// limits) at `line` and `column` (0: no place); `reason` is the
    /// relay's text for libxml2's error code, never libxml2's message
    /// (`LibXML2Errors.swift`).
    case malformed(line: Int, column: Int, reason: String)
    /// Elements nest deeper than `XMLRPCLimits.maxDepth`.
    case tooDeep(line: Int, limit: Int)
    /// More elements than `XMLRPCLimits.maxElements`.
    case tooManyElements(limit: Int)
    /// A text longer than `XMLRPCLimits.maxStringBytes`.
    case stringTooLong(line: Int, limit: Int)
    /// Well-formed XML, but not the shape XML-RPC gives a methodCall.
    case notXMLRPC(line: Int, reason: String)
    /// A typed value whose text is not of its type.
    case invalidValue(line: Int, type: String, reason: String)

    public var description: String {
        switch self {
        case .bodyTooLarge(let bytes, let limit):
            return "the XML-RPC body has \(bytes) bytes, more than the limit of \(limit)"
        case .emptyBody:
            return "the XML-RPC body is empty"
        case .doctypeRefused:
            return "the XML-RPC body has a document type declaration (<!DOCTYPE>); DTDs and entities are refused"
        case .malformed(let line, let column, let reason) where line > 0:
            return "the XML-RPC body is not well-formed XML (line \(line), column \(column)): \(reason)"
        case .malformed(_, _, let reason):
            return "the XML-RPC body is not well-formed XML: \(reason)"
        case .tooDeep(let line, let limit):
            return "the XML-RPC body nests elements deeper than \(limit) levels (line \(line))"
        case .tooManyElements(let limit):
            return "the XML-RPC body has more than \(limit) elements"
        case .stringTooLong(let line, let limit):
            return "a text in the XML-RPC body is longer than \(limit) bytes (line \(line))"
        case .notXMLRPC(let line, let reason):
            return "the XML-RPC body is not a methodCall (line \(line)): \(reason)"
        case .invalidValue(let line, let type, let reason):
            return "an XML-RPC <\(type)> value is invalid (line \(line)): \(reason)"
        }
    }
}
