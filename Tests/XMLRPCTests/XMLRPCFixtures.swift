import XMLRPC

/// The limits of these tests: a body of 1 MiB, 64 levels, 10,000
/// elements, texts of 64 KiB.
let testLimits = XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 64, maxElements: 10_000, maxStringBytes: 65_536)

/// A methodCall of `method` whose one parameter is `value` (a <value>
/// element's text).
func callDocument(_ value: String, method: String = "echo") -> [UInt8] {
    Array("<?xml version='1.0'?>\n<methodCall>\n<methodName>\(method)</methodName>\n<params>\n<param>\n\(value)\n</param>\n</params>\n</methodCall>\n".utf8)
}

/// The error `decodeXMLRPCCall` throws for `bytes`, nil when it decodes.
func decodingError(_ bytes: [UInt8], limits: XMLRPCLimits = testLimits) -> XMLRPCError? {
    do {
        _ = try decodeXMLRPCCall(bytes, limits: limits)
        return nil
    } catch {
        return error
    }
}
