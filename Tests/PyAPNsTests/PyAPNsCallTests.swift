import PyAPNs
import RelayCore
import Testing
import XMLRPC

private let limits = XMLRPCLimits(maxBodyBytes: 1 << 20, maxDepth: 64, maxElements: 100_000, maxStringBytes: 65_536)
private let tokenA = String(repeating: "ab", count: 32)
private let tokenB = String(repeating: "abcd", count: 16)

/// The call a document makes, through the XML-RPC decoder.
private func pyAPNs(_ document: String) throws -> PyAPNsCall {
    try pyAPNsCall(decodeXMLRPCCall(Array(document.utf8), limits: limits))
}

/// The fault `pyAPNsCall` answers `call` with, nil when it takes it.
private func fault(_ method: String, _ params: [XMLRPCValue]) -> PyAPNsFault? {
    do {
        _ = try pyAPNsCall(XMLRPCCall(methodName: method, params: params))
        return nil
    } catch {
        return error
    }
}

private func aps(_ alert: String) -> XMLRPCValue {
    .structure([XMLRPCMember(name: "aps", value: .structure([XMLRPCMember(name: "alert", value: .string(alert))]))])
}

@Suite("pyapns' calls")
struct PyAPNsCallTests {
    static let pythonCalls: [(name: String, document: String, call: PyAPNsCall)] = [
        ("provision with PEM text, sandbox, a timeout", PythonCall.provisionPEM.document, .provision(PyAPNsProvision(
            appID: "myapp",
            certificate: .pem("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"),
            environment: .development, timeoutSeconds: 15))),
        ("provision with a path, production, no timeout", PythonCall.provisionPath.document, .provision(PyAPNsProvision(
            appID: "other", certificate: .path("/etc/pyapns/other.pem"), environment: .production, timeoutSeconds: 15))),
        ("provision with PEM bytes", PythonCall.provisionBytes.document, .provision(PyAPNsProvision(
            appID: "bytes", certificate: .pem("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
            environment: .production, timeoutSeconds: 30))),
        ("notify with one token, spaced and in capitals, and one dict", PythonCall.notifyOne.document, .notify(PyAPNsNotify(
            appID: "myapp", tokens: [String(repeating: "abcd", count: 16)],
            payloads: [Array(#"{"aps":{"alert":"Hello!"}}"#.utf8)], pushTypes: [.alert]))),
        ("notify with two lists", PythonCall.notifyLists.document, .notify(PyAPNsNotify(
            appID: "myapp", tokens: [tokenA, String(repeating: "abcd", count: 16)],
            payloads: [Array(#"{"aps":{"alert":{"title":"T","body":"B \"q\" \\ é"},"badge":3,"sound":"default","content-available":true},"x":1.25,"n":null}"#.utf8),
                       Array(#"{"aps":{}}"#.utf8)], pushTypes: [.alert, .background]))),
        ("feedback", PythonCall.feedback.document, .feedback(appID: "myapp")),
    ]

    @Test("pyapns' calls as xmlrpc.client writes them are read as pyapns read them", arguments: pythonCalls)
    func pythonCallIsRead(_ example: (name: String, document: String, call: PyAPNsCall)) throws {
        #expect(try pyAPNs(example.document) == example.call, "\(example.name)")
    }

    static let faults: [(name: String, method: String, params: [XMLRPCValue], code: Int, text: String)] = [
        ("an unknown environment", "provision", [.string("a"), .string("/c.pem"), .string("development")], 401,
         "Invalid environment provided `development`. Valid environments are `sandbox` and `production`"),
        ("an unknown method", "unprovision", [.string("a")], 8001, "procedure unprovision not found"),
        ("provision with two arguments", "provision", [.string("a"), .string("/c.pem")], 8002,
         "provision takes 3 or 4 arguments (app_id, cert, environment, timeout), not 2"),
        ("provision with five arguments", "provision",
         [.string("a"), .string("/c.pem"), .string("sandbox"), .int(15), .int(1)], 8002,
         "provision takes 3 or 4 arguments (app_id, cert, environment, timeout), not 5"),
        ("an app id that is not a string", "provision", [.int(7), .string("/c.pem"), .string("sandbox")], 8002,
         "provision: app_id must be a string, not int"),
        ("an empty app id", "feedback", [.string("")], 8002,
         "feedback: app_id must be 1 to 255 bytes without control characters"),
        ("an app id with a line break", "feedback", [.string("a\nb")], 8002,
         "feedback: app_id must be 1 to 255 bytes without control characters"),
        ("a certificate that is an int", "provision", [.string("a"), .int(1), .string("sandbox")], 8002,
         "provision: cert must be a string (PEM text or a path), not int"),
        ("an empty certificate", "provision", [.string("a"), .string(""), .string("sandbox")], 8002,
         "provision: cert is empty"),
        ("a certificate in base64 that is not UTF-8", "provision", [.string("a"), .base64([0xFF, 0xFE]), .string("sandbox")],
         8002, "provision: the certificate in base64 is not UTF-8 PEM text"),
        ("an environment that is not a string", "provision", [.string("a"), .string("/c.pem"), .boolean(true)], 8002,
         "provision: environment must be a string, not boolean"),
        ("a zero timeout", "provision", [.string("a"), .string("/c.pem"), .string("sandbox"), .int(0)], 8002,
         "provision: timeout must be an int of 1 to 300 seconds"),
        ("a timeout as a string", "provision", [.string("a"), .string("/c.pem"), .string("sandbox"), .string("15")], 8002,
         "provision: timeout must be an int of 1 to 300 seconds"),
        ("notify with two arguments", "notify", [.string("a"), .string(tokenA)], 8002,
         "notify takes 3 arguments (app_id, token_or_token_list, notification_or_list), not 2"),
        ("lists of unequal length", "notify", [.string("a"), .array([.string(tokenA), .string(tokenB)]), .array([aps("x")])],
         8002, "notify: 2 tokens but 1 notifications; the lists must have the same length, and nothing was sent"),
        ("a token and a list", "notify", [.string("a"), .string(tokenA), .array([aps("x")])], 8002,
         "notify takes a token (string) and a notification (struct), or a list of tokens and a list of notifications, not string and array"),
        ("a list and a dict", "notify", [.string("a"), .array([.string(tokenA)]), aps("x")], 8002,
         "notify takes a token (string) and a notification (struct), or a list of tokens and a list of notifications, not array and struct"),
        ("a token that is not hex", "notify", [.string("a"), .array([.string(tokenA), .string(String(repeating: "zz", count: 32))]),
                                               .array([aps("x"), aps("y")])], 8002,
         "notify: token at index 1 is not a device token (64 to 200 hex digits)"),
        ("a token too short", "notify", [.string("a"), .string("abcd"), aps("x")], 8002,
         "notify: token at index 0 is not a device token (64 to 200 hex digits)"),
        ("a token that is an int", "notify", [.string("a"), .array([.int(1)]), .array([aps("x")])], 8002,
         "notify: token at index 0 must be a string, not int"),
        ("a notification that is a string", "notify", [.string("a"), .array([.string(tokenA)]), .array([.string("hi")])], 8002,
         "notify: notification at index 0 must be a struct, not string"),
        ("a notification with a date", "notify",
         [.string("a"), .string(tokenA), .structure([XMLRPCMember(name: "d", value: .dateTime(XMLRPCDateTime(unixSeconds: 0)))])],
         8002, "notify: notification at index 0 holds a dateTime.iso8601 value, which JSON cannot carry"),
        ("a notification with bytes", "notify",
         [.string("a"), .string(tokenA), .structure([XMLRPCMember(name: "b", value: .array([.base64([1])]))])],
         8002, "notify: notification at index 0 holds a base64 value, which JSON cannot carry"),
        ("a payload over 4096 bytes", "notify",
         [.string("a"), .array([.string(tokenA), .string(tokenB)]), .array([aps("x"), aps(String(repeating: "x", count: 4078))])],
         8002, "notify: notification at index 1 makes a 4098-byte APNs payload (max 4096)"),
        ("feedback without an app id", "feedback", [], 8002, "feedback takes 1 argument (app_id), not 0"),
    ]

    @Test("every bad call gets pyapns' fault code and a clear fault string", arguments: faults)
    func badCallFaults(_ example: (name: String, method: String, params: [XMLRPCValue], code: Int, text: String)) {
        let answer = fault(example.method, example.params)
        #expect(answer == PyAPNsFault(code: example.code, faultString: example.text), "\(example.name)")
    }

    @Test("a payload of exactly 4096 bytes is sent")
    func payloadAtTheLimitIsTaken() throws {
        let call = try pyAPNsCall(XMLRPCCall(methodName: "notify", params: [.string("a"), .string(tokenA),
                                                                           aps(String(repeating: "x", count: 4076))]))
        guard case .notify(let notify) = call else {
            Issue.record("not a notify")
            return
        }
        #expect(notify.payloads.map(\.count) == [4096])
    }

    @Test("fault strings never show a token, and shorten what they echo to one line")
    func faultsShowNoToken() throws {
        let hexLike = String(repeating: "a", count: 63)
        let badToken = fault("notify", [.string("a"), .string(hexLike), aps("x")])
        #expect(badToken.map { !$0.faultString.contains(hexLike) } == true)
        // A token given as the environment or the method is not shown whole.
        let tokenAsEnvironment = fault("provision", [.string("a"), .string("/c"), .string(tokenA)])
        #expect(tokenAsEnvironment?.code == 401)
        #expect(tokenAsEnvironment.map { !$0.faultString.contains(tokenA) } == true)
        #expect(fault(tokenA, []).map { $0.code == 8001 && !$0.faultString.contains(tokenA) } == true)
        let longEnvironment = fault("provision", [.string("a"), .string("/c"), .string(String(repeating: "e", count: 500) + "\n")])
        #expect(longEnvironment?.code == 401)
        #expect((longEnvironment?.faultString.count ?? 0) < 200)
        #expect(longEnvironment?.faultString.contains("\n") == false)
    }

    @Test("empty lists are a notify with nothing to send, as in pyapns")
    func emptyListsSendNothing() throws {
        let call = try pyAPNsCall(XMLRPCCall(methodName: "notify", params: [.string("a"), .array([]), .array([])]))
        #expect(call == .notify(PyAPNsNotify(appID: "a", tokens: [], payloads: [], pushTypes: [])))
    }
}
