// All of the module's libxml2 pointer code (ARCHITECTURE.md §3): a body
// parsed by libxml2 2.9.14 and its tree copied into Swift values
// (XMLTree.swift). A real parser, never a hand-written one.
//
// Hostile XML: the options never include XML_PARSE_NOENT (substitute
// entities), XML_PARSE_DTDLOAD / DTDATTR / DTDVALID (load or apply a DTD),
// XML_PARSE_XINCLUDE or XML_PARSE_HUGE (which lifts libxml2's own limits,
// among them a depth of 256 and 10 MB per text node); XML_PARSE_NONET
// forbids any network access. On top of that a document type declaration
// stops the parser before its internal subset is read (the SAX
// `internalSubset` callback calls `xmlStopParser`), so no entity is ever
// declared, let alone expanded, and no external subset is ever loaded: XXE
// and billion laughs end at `<!DOCTYPE`. Without a DTD an entity reference
// other than XML's five predefined ones is a well-formedness error.

import CLibXML2

/// libxml2's global state is set up once, before the first parse
/// (xmlInitParser is not safe to run twice at the same time; a global
/// `let` is initialised exactly once, under a lock).
private let libxml2Initialized: Void = xmlInitParser()

/// The parse options (libxml2 parser.h `xmlParserOption`): no network, no
/// messages on stderr (the error is read from the context instead), CDATA
/// as text (xmlrpc.client reads it so).
private let parseOptions = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue
    | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue)

/// The SAX callback for `<!DOCTYPE …`: libxml2 calls it with the parser
/// context (its `userData`) after the name and external id, before the
/// internal subset or any external one is read. Stopping there leaves
/// `errNo` at XML_ERR_USER_STOP, and libxml2 reports nothing after a stop.
private let refuseDocumentType: internalSubsetSAXFunc = { context, _, _, _ in
    guard let context else { return }
    xmlStopParser(context.assumingMemoryBound(to: xmlParserCtxt.self))
}

/// The structured-error callback: libxml2 calls it for every error with
/// the context's `userData` (the context itself) instead of printing. The
/// first fatal error is the cause; later ones follow from it (after a
/// name too long: "StartTag: invalid element name", then "Extra content
/// at the end of the document"), and the context only keeps the last.
private let recordFirstFatalError: xmlStructuredErrorFunc = { userData, error in
    guard let userData, let error, error.pointee.level == XML_ERR_FATAL else { return }
    let context = userData.assumingMemoryBound(to: xmlParserCtxt.self)
    guard let first = context.pointee._private?.assumingMemoryBound(to: LibXML2Failure?.self),
          first.pointee == nil
    else { return }
    first.pointee = LibXML2Failure(code: Int32(error.pointee.code), line: Int(error.pointee.line),
                                   column: Int(error.pointee.int2))
}

/// Owner of a libxml2 parser context, and of the place its first fatal
/// error is kept (the context's `_private`, the field libxml2 leaves to
/// its user).
private final class ParserContext {
    let pointer: xmlParserCtxtPtr
    let firstFatalError: UnsafeMutablePointer<LibXML2Failure?>

    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress, let count = Int32(exactly: bytes.count),
              let context = base.withMemoryRebound(to: CChar.self, capacity: bytes.count, {
                  xmlCreateMemoryParserCtxt($0, count)
              })
        else { return nil }
        pointer = context
        firstFatalError = .allocate(capacity: 1)
        firstFatalError.initialize(to: nil)
        context.pointee._private = UnsafeMutableRawPointer(firstFatalError)
    }

    deinit {
        xmlFreeParserCtxt(pointer)
        firstFatalError.deinitialize(count: 1)
        firstFatalError.deallocate()
    }
}

/// Owner of a libxml2 document tree.
private final class Document {
    let pointer: xmlDocPtr

    init(_ pointer: xmlDocPtr) { self.pointer = pointer }

    deinit { xmlFreeDoc(pointer) }
}

/// Parses `bytes` as an XML document and returns its root element, within
/// `limits` (the body size first, then depth, element count and text sizes
/// while the tree is copied).
func parseXMLDocument(_ bytes: [UInt8], limits: XMLRPCLimits) throws(XMLRPCError) -> XMLElement {
    guard bytes.count <= limits.maxBodyBytes else { throw .bodyTooLarge(bytes: bytes.count, limit: limits.maxBodyBytes) }
    guard !bytes.isEmpty else { throw .emptyBody }
    _ = libxml2Initialized
    let parsed: Result<Document, XMLRPCError> = bytes.withUnsafeBufferPointer { buffer in
        guard let context = ParserContext(buffer) else {
            return .failure(.malformed(line: 0, column: 0, reason: "the XML parser could not be set up for the body"))
        }
        // The owner must outlive every use of its pointer (Swift may end a
        // lifetime at the last use of the object itself).
        return withExtendedLifetime(context) { parse(context, limits: limits) }
    }
    let document = try parsed.get()
    return try withExtendedLifetime(document) { () throws(XMLRPCError) -> XMLElement in
        guard let root = xmlDocGetRootElement(document.pointer) else {
            throw .malformed(line: 0, column: 0, reason: "no root element")
        }
        var copier = TreeCopier(limits: limits)
        return try copier.copy(root, depth: 1)
    }
}

/// Runs libxml2's parser on a fresh context with the options, the DOCTYPE
/// refusal and the error recorder above; the document, if any, comes back
/// with an owner.
private func parse(_ context: ParserContext, limits: XMLRPCLimits) -> Result<Document, XMLRPCError> {
    let ctxt = context.pointer
    _ = xmlCtxtUseOptions(ctxt, parseOptions)
    ctxt.pointee.sax.pointee.internalSubset = refuseDocumentType
    ctxt.pointee.sax.pointee.serror = recordFirstFatalError
    let status = xmlParseDocument(ctxt)
    // The context does not free its document: take ownership first,
    // whatever happened.
    let document = ctxt.pointee.myDoc.map(Document.init)
    ctxt.pointee.myDoc = nil
    if ctxt.pointee.errNo == Int32(XML_ERR_USER_STOP.rawValue) { return .failure(.doctypeRefused) }
    guard status == 0, ctxt.pointee.wellFormed != 0, let document else {
        // The first fatal error, else the context's last (an error that is
        // not fatal, e.g. a namespace error, can still fail a document).
        let last = xmlCtxtGetLastError(ctxt).map {
            LibXML2Failure(code: Int32($0.pointee.code), line: Int($0.pointee.line), column: Int($0.pointee.int2))
        }
        let failure = context.firstFatalError.pointee ?? last ?? LibXML2Failure(code: 0, line: 0, column: 0)
        // libxml2 halts on its depth limit with the open elements still counted.
        let depth = max(ctxt.pointee.nameNr, ctxt.pointee.nodeNr)
        let nestedPastLibXML2 = depth > 0 && UInt32(depth) > toot_xml_parser_max_depth()
        return .failure(xmlRPCError(for: failure, nestedPastLibXML2: nestedPastLibXML2, limits: limits))
    }
    return .success(document)
}

/// Copies libxml2's tree into `XMLElement`s, counting elements and
/// measuring depth and texts against the limits as it goes.
private struct TreeCopier {
    let limits: XMLRPCLimits
    var elementCount = 0

    mutating func copy(_ node: xmlNodePtr, depth: Int) throws(XMLRPCError) -> XMLElement {
        let line = Int(xmlGetLineNo(node))
        guard depth <= limits.maxDepth else { throw .tooDeep(line: line, limit: limits.maxDepth) }
        elementCount += 1
        guard elementCount <= limits.maxElements else { throw .tooManyElements(limit: limits.maxElements) }
        let name = try text(node.pointee.name, line: line)
        var children: [XMLNode] = []
        var next = node.pointee.children
        while let child = next {
            next = child.pointee.next
            switch child.pointee.type {
            case XML_ELEMENT_NODE:
                children.append(.element(try copy(child, depth: depth + 1)))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                let part = try text(child.pointee.content, line: Int(xmlGetLineNo(child)))
                // Adjacent texts (split by a comment) are one text.
                if case .text(let before)? = children.last {
                    guard before.utf8.count + part.utf8.count <= limits.maxStringBytes else {
                        throw .stringTooLong(line: line, limit: limits.maxStringBytes)
                    }
                    children[children.count - 1] = .text(before + part)
                } else {
                    children.append(.text(part))
                }
            case XML_COMMENT_NODE, XML_PI_NODE:
                continue
            default:
                // Entity references cannot occur without a DTD; anything
                // else libxml2 might put in a tree is not XML-RPC either.
                throw .notXMLRPC(line: Int(xmlGetLineNo(child)), reason: "a node of libxml2 type \(child.pointee.type.rawValue)")
            }
        }
        return XMLElement(name: name, line: line, children: children)
    }

    /// A libxml2 string (UTF-8, checked by libxml2) as a String, within
    /// the text limit.
    private func text(_ chars: UnsafePointer<xmlChar>?, line: Int) throws(XMLRPCError) -> String {
        guard let chars else { return "" }
        let length = Int(xmlStrlen(chars))
        guard length <= limits.maxStringBytes else { throw .stringTooLong(line: line, limit: limits.maxStringBytes) }
        return String(decoding: UnsafeBufferPointer(start: chars, count: length), as: UTF8.self)
    }
}
