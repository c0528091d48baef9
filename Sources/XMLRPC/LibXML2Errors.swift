// libxml2's parse errors in the relay's own words.
// libxml2's messages are not for a fault: they name an option the relay
// never sets ("Excessive depth in document: 256 use XML_PARSE_HUGE
// option"), and some quote the body ("Bytes: 0xFF 0xFE …"). A fault names
// the kind of fault (depth, size, not well-formed) and where: line and column.

import CLibXML2

/// libxml2's first fatal error on a document: its code (libxml2
/// xmlerror.h, `xmlParserErrors`) and where it was found.
struct LibXML2Failure: Equatable {
    var code: Int32
    var line: Int
    var column: Int
}

/// The error `failure` is in the relay's words. `nestedPastLibXML2`: the
/// parser stopped at its own depth limit (parserInternals.h
/// `xmlParserMaxDepth`, 256); the body is then deeper than the relay's
/// limit too whenever that is the lower one.
func xmlRPCError(for failure: LibXML2Failure, nestedPastLibXML2: Bool, limits: XMLRPCLimits) -> XMLRPCError {
    if nestedPastLibXML2 {
        return .tooDeep(line: failure.line, limit: min(limits.maxDepth, Int(toot_xml_parser_max_depth())))
    }
    let reason = libXML2Reasons.first { $0.codes.contains(failure.code) }?.reason
        ?? "markup XML does not allow (XML parser error \(failure.code))"
    return .malformed(line: failure.line, column: failure.column, reason: reason)
}

private func codes(_ errors: xmlParserErrors...) -> [Int32] { errors.map { Int32($0.rawValue) } }

/// What each libxml2 error code means in a body, for those a sender can
/// provoke without a DTD (a DTD is refused before it is read). Several
/// "not finished" codes are also what libxml2 reports for a construct past
/// its size limits (parser.c: comments, CDATA, attribute values and
/// processing instructions over XML_MAX_TEXT_LENGTH); their texts say both.
private let libXML2Reasons: [(codes: [Int32], reason: String)] = [
    (codes(XML_ERR_DOCUMENT_START, XML_ERR_DOCUMENT_EMPTY), "no root element: the body does not start with a tag"),
    (codes(XML_ERR_DOCUMENT_END, XML_ERR_EXTRA_CONTENT), "content after the root element"),
    (codes(XML_ERR_INVALID_CHAR, XML_ERR_INVALID_CHARREF, XML_ERR_INVALID_DEC_CHARREF, XML_ERR_INVALID_HEX_CHARREF),
     "a character XML does not allow, or bytes that are not UTF-8"),
    (codes(XML_ERR_INVALID_ENCODING), "bytes that are not in the document's encoding"),
    (codes(XML_ERR_UNKNOWN_ENCODING, XML_ERR_UNSUPPORTED_ENCODING, XML_ERR_ENCODING_NAME),
     "an encoding the relay does not read (send UTF-8)"),
    (codes(XML_ERR_UNDECLARED_ENTITY, XML_WAR_UNDECLARED_ENTITY),
     "an entity other than XML's five (&lt; &gt; &amp; &apos; &quot;)"),
    (codes(XML_ERR_ENTITYREF_NO_NAME, XML_ERR_ENTITYREF_SEMICOL_MISSING, XML_ERR_ENTITYREF_AT_EOF),
     "an & that starts no reference (write &amp;)"),
    (codes(XML_ERR_TAG_NAME_MISMATCH), "an end tag that does not match its start tag"),
    (codes(XML_ERR_TAG_NOT_FINISHED), "an element that is never closed (the body ends inside it)"),
    (codes(XML_ERR_NAME_REQUIRED, XML_ERR_GT_REQUIRED, XML_ERR_LT_REQUIRED, XML_ERR_LTSLASH_REQUIRED,
           XML_ERR_SPACE_REQUIRED, XML_ERR_EQUAL_REQUIRED, XML_ERR_ATTRIBUTE_WITHOUT_VALUE,
           XML_ERR_ATTRIBUTE_NOT_STARTED, XML_ERR_LT_IN_ATTRIBUTE), "a broken tag"),
    (codes(XML_ERR_ATTRIBUTE_REDEFINED), "an attribute given twice in one tag"),
    (codes(XML_ERR_ATTRIBUTE_NOT_FINISHED),
     "an attribute value that is not closed or is longer than \(XML_MAX_TEXT_LENGTH) bytes"),
    (codes(XML_ERR_COMMENT_NOT_FINISHED), "a comment that is not closed or is longer than \(XML_MAX_TEXT_LENGTH) bytes"),
    (codes(XML_ERR_HYPHEN_IN_COMMENT), "-- inside a comment"),
    (codes(XML_ERR_CDATA_NOT_FINISHED), "a CDATA section that is not closed or is longer than \(XML_MAX_TEXT_LENGTH) bytes"),
    (codes(XML_ERR_MISPLACED_CDATA_END), "]]> outside a CDATA section"),
    (codes(XML_ERR_PI_NOT_STARTED, XML_ERR_PI_NOT_FINISHED),
     "a processing instruction that is broken or longer than \(XML_MAX_TEXT_LENGTH) bytes"),
    (codes(XML_ERR_RESERVED_XML_NAME), "an XML declaration that is not at the start of the body"),
    (codes(XML_ERR_XMLDECL_NOT_STARTED, XML_ERR_XMLDECL_NOT_FINISHED, XML_ERR_VERSION_MISSING, XML_ERR_STANDALONE_VALUE,
           XML_ERR_STRING_NOT_STARTED, XML_ERR_STRING_NOT_CLOSED), "a broken XML declaration"),
    (codes(XML_ERR_NAME_TOO_LONG), "a name longer than \(XML_MAX_NAME_LENGTH) bytes"),
    (codes(XML_ERR_NO_MEMORY), "more than the XML parser will hold"),
]
