import Testing
import XMLRPC

@Suite("Decoding XML-RPC calls")
struct XMLRPCDecodingTests {
    static let values: [(xml: String, value: XMLRPCValue)] = [
        ("<value><int>42</int></value>", .int(42)),
        ("<value><i4>-7</i4></value>", .int(-7)),
        ("<value><int> +15 </int></value>", .int(15)),
        ("<value><i8>1099511627776</i8></value>", .int(1 << 40)),
        ("<value><boolean>1</boolean></value>", .boolean(true)),
        ("<value><boolean>0</boolean></value>", .boolean(false)),
        ("<value><string>Hello!</string></value>", .string("Hello!")),
        ("<value><string></string></value>", .string("")),
        ("<value><string/></value>", .string("")),
        ("<value><string> a &lt;&amp;&gt; &#233;&#x1F600; </string></value>", .string(" a <&> é😀 ")),
        ("<value><string><![CDATA[<b>&amp;</b>]]></string></value>", .string("<b>&amp;</b>")),
        ("<value>bare text</value>", .string("bare text")),
        ("<value></value>", .string("")),
        ("<value>  </value>", .string("  ")),
        ("<value><double>1.5</double></value>", .double(1.5)),
        ("<value><double>-0.25</double></value>", .double(-0.25)),
        ("<value><double>1e+22</double></value>", .double(1e22)),
        ("<value><dateTime.iso8601>20261123T20:55:14</dateTime.iso8601></value>",
         .dateTime(XMLRPCDateTime(text: "20261123T20:55:14")!)),
        ("<value><base64>\nLS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n</base64></value>",
         .base64(Array("-----BEGIN CERTIFICATE-----\n".utf8))),
        ("<value><base64></base64></value>", .base64([])),
        ("<value><nil/></value>", .nil),
        ("<value><array><data>\n<value><int>1</int></value>\n<value>two</value>\n</data></array></value>",
         .array([.int(1), .string("two")])),
        ("<value><array><data></data></array></value>", .array([])),
        ("<value><struct>\n<member>\n<name>b</name>\n<value><int>2</int></value>\n</member>\n<member>\n<name>a</name>\n"
            + "<value><struct></struct></value>\n</member>\n</struct></value>",
         .structure([XMLRPCMember(name: "b", value: .int(2)), XMLRPCMember(name: "a", value: .structure([]))])),
        ("<value><!-- a comment --><int>3</int></value>", .int(3)),
    ]

    @Test("every XML-RPC value type decodes to its value", arguments: values)
    func valueDecodes(_ example: (xml: String, value: XMLRPCValue)) throws {
        let call = try decodeXMLRPCCall(callDocument(example.xml), limits: testLimits)
        #expect(call == XMLRPCCall(methodName: "echo", params: [example.value]))
    }

    static let invalidValues: [(xml: String, type: String)] = [
        ("<value><int>4.5</int></value>", "int"),
        ("<value><int></int></value>", "int"),
        ("<value><i4>99999999999999999999</i4></value>", "i4"),
        ("<value><boolean>true</boolean></value>", "boolean"),
        ("<value><double>inf</double></value>", "double"),
        ("<value><double>nan</double></value>", "double"),
        ("<value><double>0x1p3</double></value>", "double"),
        ("<value><double>1e999</double></value>", "double"),
        ("<value><dateTime.iso8601>2026-11-23T20:55:14</dateTime.iso8601></value>", "dateTime.iso8601"),
        ("<value><dateTime.iso8601>20260230T20:55:14</dateTime.iso8601></value>", "dateTime.iso8601"),
        ("<value><base64>not base64!</base64></value>", "base64"),
        ("<value><nil>x</nil></value>", "nil"),
    ]

    @Test("a value whose text is not of its type is refused, naming the type", arguments: invalidValues)
    func invalidValueIsRefused(_ example: (xml: String, type: String)) {
        guard case .invalidValue(_, let type, _) = decodingError(callDocument(example.xml)) else {
            Issue.record("not refused as an invalid value: \(example.xml)")
            return
        }
        #expect(type == example.type)
    }

    static let notXMLRPC: [String] = [
        "<?xml version='1.0'?><methodResponse><params/></methodResponse>",
        "<methodCall><params/></methodCall>",
        "<methodCall><methodName></methodName></methodCall>",
        "<methodCall><methodName>a<b/></methodName></methodCall>",
        "<methodCall><methodName>a</methodName><params/><extra/></methodCall>",
        "<methodCall><methodName>a</methodName><params><value/></params></methodCall>",
        "<methodCall><methodName>a</methodName><params><param/></params></methodCall>",
        "<methodCall><methodName>a</methodName><params><param><value/><value/></param></params></methodCall>",
        "<methodCall><methodName>a</methodName>stray<params/></methodCall>",
        "<methodCall><methodName>a</methodName><params><param><value><float>1</float></value></param></params></methodCall>",
        "<methodCall><methodName>a</methodName><params><param><value>x<int>1</int></value></param></params></methodCall>",
        "<methodCall><methodName>a</methodName><params><param><value><int>1</int><int>2</int></value></param></params></methodCall>",
        "<methodCall><methodName>a</methodName><params><param><value><array><value/></array></value></param></params></methodCall>",
        "<methodCall><methodName>a</methodName><params><param><value><struct><member><name>x</name></member></struct></value></param></params></methodCall>",
        "<methodCall><methodName>a</methodName><params><param><value><string><b/></string></value></param></params></methodCall>",
    ]

    @Test("well-formed XML that is not a methodCall is refused", arguments: notXMLRPC)
    func notAMethodCallIsRefused(_ document: String) {
        guard case .notXMLRPC = decodingError(Array(document.utf8)) else {
            Issue.record("not refused as not XML-RPC: \(document)")
            return
        }
    }

    @Test("a struct naming a member twice is refused")
    func duplicateMemberIsRefused() {
        let xml = "<value><struct><member><name>a</name><value>1</value></member>"
            + "<member><name>a</name><value>2</value></member></struct></value>"
        guard case .invalidValue(_, "struct", _) = decodingError(callDocument(xml)) else {
            Issue.record("a duplicate member name was taken")
            return
        }
    }

    @Test("a call without params has no parameters")
    func callWithoutParams() throws {
        let call = try decodeXMLRPCCall(Array("<methodCall><methodName> system.listMethods </methodName></methodCall>".utf8),
                                        limits: testLimits)
        #expect(call == XMLRPCCall(methodName: "system.listMethods", params: []))
    }

    @Test("a document in ISO-8859-1, as its declaration says, decodes to the same text")
    func declaredEncodingIsHonoured() throws {
        let bytes = Array("<?xml version='1.0' encoding='iso-8859-1'?><methodCall><methodName>a</methodName><params><param><value>".utf8)
            + [0x63, 0x61, 0x66, 0xE9] + Array("</value></param></params></methodCall>".utf8)
        #expect(try decodeXMLRPCCall(bytes, limits: testLimits).params == [.string("café")])
    }

    // Written by Python 3.11's xmlrpc.client: `xmlrpc.client.dumps(args, method)`.
    static let pythonCalls: [(document: String, call: XMLRPCCall)] = [
        ("<?xml version='1.0'?>\n<methodCall>\n<methodName>feedback</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n</params>\n</methodCall>\n",
         XMLRPCCall(methodName: "feedback", params: [.string("myapp")])),
        ("<?xml version='1.0'?>\n<methodCall>\n<methodName>provision</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n<param>\n<value><string>-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n</string></value>\n</param>\n<param>\n<value><string>sandbox</string></value>\n</param>\n<param>\n<value><int>15</int></value>\n</param>\n</params>\n</methodCall>\n",
         XMLRPCCall(methodName: "provision", params: [.string("myapp"), .string("-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"),
                                                       .string("sandbox"), .int(15)])),
        ("<?xml version='1.0'?>\n<methodCall>\n<methodName>provision</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n<param>\n<value><base64>\nLS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n</base64></value>\n</param>\n<param>\n<value><string>production</string></value>\n</param>\n</params>\n</methodCall>\n",
         XMLRPCCall(methodName: "provision", params: [.string("myapp"), .base64(Array("-----BEGIN CERTIFICATE-----\n".utf8)),
                                                       .string("production")])),
        ("<?xml version='1.0'?>\n<methodCall>\n<methodName>notify</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n<param>\n<value><string>aa bb</string></value>\n</param>\n<param>\n<value><struct>\n<member>\n<name>aps</name>\n<value><struct>\n<member>\n<name>alert</name>\n<value><string>Hello!</string></value>\n</member>\n<member>\n<name>badge</name>\n<value><int>1</int></value>\n</member>\n<member>\n<name>x</name>\n<value><double>1.5</double></value>\n</member>\n<member>\n<name>b</name>\n<value><boolean>1</boolean></value>\n</member>\n<member>\n<name>l</name>\n<value><array><data>\n<value><int>1</int></value>\n<value><string>a</string></value>\n</data></array></value>\n</member>\n</struct></value>\n</member>\n</struct></value>\n</param>\n</params>\n</methodCall>\n",
         XMLRPCCall(methodName: "notify", params: [
             .string("myapp"), .string("aa bb"),
             .structure([XMLRPCMember(name: "aps", value: .structure([
                 XMLRPCMember(name: "alert", value: .string("Hello!")), XMLRPCMember(name: "badge", value: .int(1)),
                 XMLRPCMember(name: "x", value: .double(1.5)), XMLRPCMember(name: "b", value: .boolean(true)),
                 XMLRPCMember(name: "l", value: .array([.int(1), .string("a")])),
             ]))]),
         ])),
    ]

    @Test("calls exactly as Python's xmlrpc.client writes them decode", arguments: pythonCalls)
    func pythonCallDecodes(_ example: (document: String, call: XMLRPCCall)) throws {
        #expect(try decodeXMLRPCCall(Array(example.document.utf8), limits: testLimits) == example.call)
    }

    @Test("a date and time reads and writes in xmlrpc.client's form, from Unix seconds in UTC")
    func dateTimeForms() {
        #expect(XMLRPCDateTime(unixSeconds: 1_795_467_314).text == "20261123T20:55:14")
        #expect(XMLRPCDateTime(unixSeconds: 0).text == "19700101T00:00:00")
        #expect(XMLRPCDateTime(unixSeconds: 951_782_400).text == "20000229T00:00:00")
        #expect(XMLRPCDateTime(unixSeconds: .max).text == "99991231T23:59:59")
        #expect(XMLRPCDateTime(unixSeconds: .min).text == "00010101T00:00:00")
        #expect(XMLRPCDateTime(text: "20261123T20:55:14") == XMLRPCDateTime(unixSeconds: 1_795_467_314))
        #expect(XMLRPCDateTime(text: "20250229T00:00:00") == nil)
        #expect(XMLRPCDateTime(text: "00000101T00:00:00") == nil)
        #expect(XMLRPCDateTime(text: "20261123T24:00:00") == nil)
    }
}
