import Foundation
import PyAPNs
import Testing
import XMLRPC

private let token = String(repeating: "0f", count: 32)

/// The APNs payload notify makes of `notification`.
private func payload(_ notification: XMLRPCValue) throws -> String {
    guard case .notify(let notify) = try pyAPNsCall(XMLRPCCall(methodName: "notify",
                                                               params: [.string("a"), .string(token), notification]))
    else { throw PyAPNsFault(code: 0, faultString: "not a notify") }
    return String(decoding: notify.payloads[0], as: UTF8.self)
}

private func members(_ pairs: [(String, XMLRPCValue)]) -> XMLRPCValue {
    .structure(pairs.map { XMLRPCMember(name: $0.0, value: $0.1) })
}

@Suite("pyapns' notification dictionaries as APNs JSON")
struct PyAPNsPayloadTests {
    static let examples: [(notification: XMLRPCValue, json: String)] = [
        (members([("aps", members([("alert", .string("Hello!"))]))]), #"{"aps":{"alert":"Hello!"}}"#),
        (members([("i", .int(-42)), ("big", .int(1 << 40))]), #"{"i":-42,"big":1099511627776}"#),
        (members([("t", .boolean(true)), ("f", .boolean(false))]), #"{"t":true,"f":false}"#),
        (members([("d", .double(1.5)), ("whole", .double(100)), ("tiny", .double(1e-7)), ("huge", .double(1e22))]),
         #"{"d":1.5,"whole":100.0,"tiny":1e-07,"huge":1e+22}"#),
        (members([("s", .string("quote \" backslash \\ line\n tab\t nul\u{1} é 😀 </script>"))]),
         #"{"s":"quote \" backslash \\ line\n tab\t nul\u0001 é 😀 </script>"}"#),
        (members([("n", .nil), ("empty", members([])), ("list", .array([]))]), #"{"n":null,"empty":{},"list":[]}"#),
        (members([("z", .int(1)), ("a", .int(2)), ("m", .int(3))]), #"{"z":1,"a":2,"m":3}"#),
        (members([("nested", .array([.int(1), .array([.string("x"), members([("k", .boolean(true))])]), .nil]))]),
         #"{"nested":[1,["x",{"k":true}],null]}"#),
        (members([("key \"quoted\"", .string(""))]), #"{"key \"quoted\"":""}"#),
    ]

    @Test("every type is kept exactly, in member order, compact as pyapns' json.dumps", arguments: examples)
    func payloadIsExact(_ example: (notification: XMLRPCValue, json: String)) throws {
        let json = try payload(example.notification)
        #expect(json == example.json)
        // And it is JSON another parser reads.
        #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil)
    }
}
