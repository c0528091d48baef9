import Testing
import XMLRPC

@Suite("Encoding XML-RPC answers")
struct XMLRPCEncodingTests {
    // Each expected document is what Python 3.11's xmlrpc.client writes:
    // `xmlrpc.client.dumps((value,), methodresponse=True, allow_none=True)`.
    static let responses: [(value: XMLRPCValue, python: String)] = [
        (.nil, "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><nil/></value></param>\n</params>\n</methodResponse>\n"),
        (.array([.int(1), .boolean(true), .string("a<&>\n"), .double(1.5),
                 .dateTime(XMLRPCDateTime(unixSeconds: 1_795_467_314)),
                 .structure([XMLRPCMember(name: "k", value: .array([.int(-7), .nil]))])]),
         "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><array><data>\n<value><int>1</int></value>\n<value><boolean>1</boolean></value>\n<value><string>a&lt;&amp;&gt;\n</string></value>\n<value><double>1.5</double></value>\n<value><dateTime.iso8601>20261123T20:55:14</dateTime.iso8601></value>\n<value><struct>\n<member>\n<name>k</name>\n<value><array><data>\n<value><int>-7</int></value>\n<value><nil/></value></data></array></value>\n</member>\n</struct></value>\n</data></array></value>\n</param>\n</params>\n</methodResponse>\n"),
    ]

    @Test("a response is written byte for byte as xmlrpc.client writes it", arguments: responses)
    func responseMatchesPython(_ example: (value: XMLRPCValue, python: String)) {
        #expect(String(decoding: encodeXMLRPCResponse(example.value), as: UTF8.self) == example.python)
    }

    @Test("a fault is written byte for byte as xmlrpc.client writes it")
    func faultMatchesPython() {
        let python = "<?xml version='1.0'?>\n<methodResponse>\n<fault>\n<value><struct>\n<member>\n<name>faultCode</name>\n<value><int>401</int></value>\n</member>\n<member>\n<name>faultString</name>\n<value><string>Invalid environment provided `dev`. Valid environments are `sandbox` and `production`</string></value>\n</member>\n</struct></value>\n</fault>\n</methodResponse>\n"
        let encoded = encodeXMLRPCFault(code: 401, faultString: "Invalid environment provided `dev`. Valid environments are `sandbox` and `production`")
        #expect(String(decoding: encoded, as: UTF8.self) == python)
    }

    static let texts: [(text: String, written: String)] = [
        ("a & b < c > d", "a &amp; b &lt; c &gt; d"),
        ("line\r\nbreak\ttab", "line&#13;\nbreak\ttab"),
        ("nul\u{0} bell\u{7} \u{FFFE}", "nul\u{FFFD} bell\u{FFFD} \u{FFFD}"),
        ("]]> \"quotes\" 'single' é😀", "]]&gt; \"quotes\" 'single' é😀"),
    ]

    @Test("text is escaped so the document stays well-formed and reads back the same", arguments: texts)
    func textIsEscaped(_ example: (text: String, written: String)) throws {
        let encoded = String(decoding: encodeXMLRPCResponse(.string(example.text)), as: UTF8.self)
        #expect(encoded.contains("<string>" + example.written + "</string>"))
        // Read back through libxml2 as a call's parameter.
        let call = encoded.replacingOccurrences(of: "methodResponse>", with: "methodCall>")
            .replacingOccurrences(of: "<params>", with: "<methodName>echo</methodName>\n<params>")
        let expected = example.text.unicodeScalars.map { $0.value < 0x20 && $0 != "\r" && $0 != "\n" && $0 != "\t"
            || $0.value == 0xFFFE ? "\u{FFFD}" : String($0) }.joined()
        #expect(try decodeXMLRPCCall(Array(call.utf8), limits: testLimits).params == [.string(expected)])
    }

    @Test("every value type written reads back as the same value")
    func valuesRoundTrip() throws {
        let value = XMLRPCValue.array([
            .int(Int(Int32.max)), .int(1 << 40), .int(-1), .boolean(false), .string(""), .string("x"), .double(-2.5e-8),
            .dateTime(XMLRPCDateTime(unixSeconds: 0)), .base64([0, 1, 2, 255]), .base64([]),
            .structure([XMLRPCMember(name: "a&b", value: .nil), XMLRPCMember(name: "", value: .structure([]))]),
            .array([]), .nil,
        ])
        let encoded = String(decoding: encodeXMLRPCResponse(value), as: UTF8.self)
        #expect(encoded.contains("<i8>1099511627776</i8>") && encoded.contains("<int>2147483647</int>"))
        let call = encoded.replacingOccurrences(of: "methodResponse>", with: "methodCall>")
            .replacingOccurrences(of: "<params>", with: "<methodName>echo</methodName>\n<params>")
        #expect(try decodeXMLRPCCall(Array(call.utf8), limits: testLimits).params == [value])
    }
}
