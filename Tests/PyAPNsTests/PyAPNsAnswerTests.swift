import PyAPNs
import Testing
import XMLRPC

// The expected documents are what Twisted's XML-RPC resource sent for
// pyapns: xmlrpclib's `dumps((result,), methodresponse=True, allow_none=True)`,
// here from Python 3.11's xmlrpc.client.
@Suite("pyapns' answers")
struct PyAPNsAnswerTests {
    @Test("provision and notify answer nil as Twisted wrote it with allowNone")
    func nilAnswer() {
        #expect(String(decoding: pyAPNsNilResponse, as: UTF8.self)
            == "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><nil/></value></param>\n</params>\n</methodResponse>\n")
    }

    static let feedbacks: [(entries: [(unixSeconds: Int, token: String)], python: String)] = [
        ([(1_795_467_314, String(repeating: "ab", count: 32)), (0, String(repeating: "cd", count: 32))],
         "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><array><data>\n<value><array><data>\n<value><dateTime.iso8601>20261123T20:55:14</dateTime.iso8601></value>\n<value><string>abababababababababababababababababababababababababababababababab</string></value>\n</data></array></value>\n<value><array><data>\n<value><dateTime.iso8601>19700101T00:00:00</dateTime.iso8601></value>\n<value><string>cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd</string></value>\n</data></array></value>\n</data></array></value>\n</param>\n</params>\n</methodResponse>\n"),
        ([], "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><array><data>\n</data></array></value>\n</param>\n</params>\n</methodResponse>\n"),
    ]

    @Test("feedback answers [dateTime, token] pairs in UTC as xmlrpc.client writes them", arguments: feedbacks)
    func feedbackAnswer(_ example: (entries: [(unixSeconds: Int, token: String)], python: String)) {
        #expect(String(decoding: pyAPNsFeedbackResponse(example.entries), as: UTF8.self) == example.python)
    }

    @Test("the faults the caller produces carry pyapns' codes and texts")
    func callerFaults() {
        #expect(PyAPNsFault.notProvisioned == PyAPNsFault(code: 404, faultString: "The app_id specified has not been provisioned."))
        #expect(PyAPNsFault.noConnection == PyAPNsFault(code: 500, faultString: "Connection to the APNS server could not be made."))
        #expect(String(decoding: PyAPNsFault.notProvisioned.response, as: UTF8.self)
            == "<?xml version='1.0'?>\n<methodResponse>\n<fault>\n<value><struct>\n<member>\n<name>faultCode</name>\n<value><int>404</int></value>\n</member>\n<member>\n<name>faultString</name>\n<value><string>The app_id specified has not been provisioned.</string></value>\n</member>\n</struct></value>\n</fault>\n</methodResponse>\n")
    }

    @Test("a body that is not XML-RPC is Twisted's fault 8002 with the decoder's reason")
    func undecodableBody() {
        #expect(PyAPNsFault.undecodable(.doctypeRefused) == PyAPNsFault(
            code: 8002, faultString: "Can't deserialize input: \(XMLRPCError.doctypeRefused)"))
    }
}
