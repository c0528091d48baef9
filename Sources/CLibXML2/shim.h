#ifndef TOOT_RELAY_CLIBXML2_SHIM_H
#define TOOT_RELAY_CLIBXML2_SHIM_H
// libxml2 2.9.14 (Debian 12), for the XML-RPC decoder (pyapns' interface) only:
// the module XMLRPC is its one importer (ARCHITECTURE.md §3).
#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU, and encoding.h then includes the system's
// <unicode/ucnv.h>, whose UErrorCode clashes with Foundation's own ICU
// (_FoundationICU) in any module importing both. Only the definition of
// xmlCharEncodingHandler depends on it (two trailing ICU converter
// fields); the Swift code never dereferences a handler, only passes the
// parser context around, so hiding the ICU part changes nothing it reads.
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
// The options are enum values, xmlChar is unsigned char: no macro needs a
// wrapper. libxml2's depth limit is a mutable global, which Swift 6 may not
// read unchecked; a function returns it (libxml2 never changes it itself).
static inline unsigned int toot_xml_parser_max_depth(void) { return xmlParserMaxDepth; }
#endif
