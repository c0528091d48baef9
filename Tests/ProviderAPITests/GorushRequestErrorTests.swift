// Requests refused whole (400 with gorush's error JSON): gorush's own
// messages where gorush has one, clear ones elsewhere; hostile bodies
// refused quickly.

import Foundation
@testable import ProviderAPI
import Testing

struct RefusedBody: Sendable, CustomTestStringConvertible {
    var name: String
    var body: [UInt8]
    var message: String
    var testDescription: String { name }

    init(_ name: String, _ body: some Sequence<UInt8>, _ message: String) {
        (self.name, self.body, self.message) = (name, Array(body), message)
    }
}

let refusedBodies: [RefusedBody] = [
    RefusedBody("empty body", "".utf8, "Malformed JSON: invalid JSON at byte 0: unexpected end of input, a value was expected."),
    RefusedBody("not JSON", "notifications".utf8, "Malformed JSON: invalid JSON at byte 0: unexpected 'n', a value was expected."),
    RefusedBody("truncated", #"{"notifications":["#.utf8, "Malformed JSON: invalid JSON at byte 18: unexpected end of input, a value was expected."),
    RefusedBody("trailing text", #"{"notifications":[]} x"#.utf8, "Malformed JSON: invalid JSON at byte 21: unexpected 'x' after the JSON value."),
    RefusedBody("a top-level array", "[]".utf8, "The body must be a JSON object with a notifications array, not an array."),
    RefusedBody("missing notifications", "{}".utf8, "Missing notifications field."),
    RefusedBody("null notifications", #"{"notifications":null}"#.utf8, "Missing notifications field."),
    RefusedBody("notifications an object", #"{"notifications":{}}"#.utf8, "notifications must be an array, not an object."),
    RefusedBody("empty notifications", #"{"notifications":[]}"#.utf8, "Notifications field is empty."),
    RefusedBody("a notification that is a string", #"{"notifications":["x"]}"#.utf8, "notifications[0] must be an object, not a string."),
    RefusedBody("duplicate key", #"{"notifications":[{"badge":1,"badge":2}]}"#.utf8,
                #"Malformed JSON: invalid JSON at byte 29: the name "badge" appears twice in one object."#),
    RefusedBody("async a string", #"{"async":"true","notifications":[{}]}"#.utf8, "async must be true or false, not a string."),
    RefusedBody("async a number", #"{"async":1,"notifications":[{}]}"#.utf8, "async must be true or false, not a number."),
    RefusedBody("async an object", #"{"async":{},"notifications":[{}]}"#.utf8, "async must be true or false, not an object."),
    RefusedBody("async twice", #"{"async":true,"async":false,"notifications":[{}]}"#.utf8,
                #"Malformed JSON: invalid JSON at byte 14: the name "async" appears twice in one object."#),
    RefusedBody("tokens a string", #"{"notifications":[{"tokens":"abc"}]}"#.utf8,
                "notifications[0].tokens must be an array of strings, not a string."),
    RefusedBody("a token a number", #"{"notifications":[{"tokens":[1]}]}"#.utf8,
                "notifications[0].tokens[0] must be a string, not a number."),
    RefusedBody("platform a string", #"{"notifications":[{"platform":"1"}]}"#.utf8,
                "notifications[0].platform must be an integer, not a string."),
    RefusedBody("platform a fraction", #"{"notifications":[{"platform":1.5}]}"#.utf8,
                #"notifications[0].platform must be an integer between -9223372036854775808 and 9223372036854775807, not "1.5"."#),
    RefusedBody("badge beyond a double", #"{"notifications":[{"badge":1e400}]}"#.utf8,
                "Malformed JSON: invalid JSON at byte 27: a number beyond the range of a double."),
    RefusedBody("badge with an exponent", #"{"notifications":[{"badge":1e2}]}"#.utf8,
                #"notifications[0].badge must be an integer between -9223372036854775808 and 9223372036854775807, not "1e2"."#),
    RefusedBody("expiration too big", #"{"notifications":[{"expiration":9223372036854775808}]}"#.utf8,
                #"notifications[0].expiration must be an integer between -9223372036854775808 and 9223372036854775807, not "9223372036854775808"."#),
    RefusedBody("message a number", #"{"notifications":[{"message":5}]}"#.utf8, "notifications[0].message must be a string, not a number."),
    RefusedBody("content_available a string", #"{"notifications":[{"content_available":"true"}]}"#.utf8,
                "notifications[0].content_available must be true or false, not a string."),
    RefusedBody("data an array", #"{"notifications":[{"data":[1]}]}"#.utf8, "notifications[0].data must be an object, not an array."),
    RefusedBody("alert a string", #"{"notifications":[{"alert":"hi"}]}"#.utf8, "notifications[0].alert must be an object, not a string."),
    RefusedBody("alert loc-args numbers", #"{"notifications":[{"alert":{"loc-args":[1]}}]}"#.utf8,
                "notifications[0].alert.loc-args[0] must be a string, not a number."),
    RefusedBody("sound a number", #"{"notifications":[{"sound":1}]}"#.utf8,
                "notifications[0].sound must be a string or an object, not a number."),
    RefusedBody("sound critical a string", #"{"notifications":[{"sound":{"critical":"1"}}]}"#.utf8,
                "notifications[0].sound.critical must be an integer, not a string."),
    RefusedBody("volume out of float32 range", #"{"notifications":[{"volume":1e39}]}"#.utf8,
                #"notifications[0].volume is out of range: "1e39"."#),
    RefusedBody("relevance-score out of range", #"{"notifications":[{"relevance-score":1e300}]}"#.utf8,
                #"notifications[0].relevance-score is out of range: "1e300"."#),
    RefusedBody("app a number", #"{"notifications":[{"app":1}]}"#.utf8, "notifications[0].app must be a string, not a number."),
    RefusedBody("invalid UTF-8", [UInt8](#"{"notifications":[{"message":""#.utf8) + [0xC3, 0x28] + [UInt8](#""}]}"#.utf8),
                "Malformed JSON: invalid JSON at byte 30: bytes that are not UTF-8 in a string (RFC 8259 §8.1)."),
    RefusedBody("a raw NUL in a string", [UInt8](#"{"notifications":[{"message":""#.utf8) + [0] + [UInt8](#""}]}"#.utf8),
                "Malformed JSON: invalid JSON at byte 30: a control character (byte 0x0) must be escaped in a string."),
    RefusedBody("a NUL outside strings", [UInt8](#"{"notifications":[]}"#.utf8) + [0],
                "Malformed JSON: invalid JSON at byte 20: unexpected byte 0x0 after the JSON value."),
    RefusedBody("a byte order mark", [0xEF, 0xBB, 0xBF] + [UInt8](#"{"notifications":[]}"#.utf8),
                "Malformed JSON: invalid JSON at byte 0: a byte order mark is not allowed (RFC 8259 §8.1)."),
    RefusedBody("a lone surrogate", #"{"notifications":[{"message":"\ud800"}]}"#.utf8,
                #"Malformed JSON: invalid JSON at byte 30: a high surrogate \uD800 without its low half."#),
]

@Test("a malformed or mistyped request is refused with a clear message", arguments: refusedBodies)
func malformedRequestIsRefused(_ refused: RefusedBody) {
    #expect(throws: ProviderRequestError(refused.message)) {
        try decodeGorushRequest(refused.body, limits: roomyLimits)
    }
}

@Test("the limits refuse a body, notifications or tokens over them, with gorush's message for notifications")
func limitsAreEnforced() throws {
    let limits = ProviderLimits(maxBodyBytes: 200, maxNotifications: 2, maxTokens: 3)
    let big = Array(repeating: UInt8(ascii: " "), count: 201)
    #expect(throws: ProviderRequestError("Request body of 201 bytes is over the limit of 200 bytes.")) {
        try decodeGorushRequest(big, limits: limits)
    }
    let three = #"{"notifications":[{},{},{}]}"#
    #expect(throws: ProviderRequestError("Number of notifications(3) over limit(2)")) {
        try decodeGorushRequest(Array(three.utf8), limits: limits)
    }
    let fourTokens = #"{"notifications":[{"tokens":["a","b"]},{"tokens":["c","d"]}]}"#
    #expect(throws: ProviderRequestError("Number of tokens(4) over limit(3)")) {
        try decodeGorushRequest(Array(fourTokens.utf8), limits: limits)
    }
    let atLimits = #"{"notifications":[{"tokens":["a","b"]},{"tokens":["c"]}]}"#
    #expect(try decodeGorushRequest(Array(atLimits.utf8), limits: limits).count == 2)
}

/// Hostile bodies: each is refused, and quickly (bounded work).
@Test("hostile bodies are refused quickly", arguments: [
    "10 MB", "nesting 10,000 deep", "1,000,000-element array", "a million-digit badge", "100,000 notifications",
    "a 300-digit badge",
])
func hostileBodyIsRefusedQuickly(_ kind: String) throws {
    let limits = ProviderLimits(maxBodyBytes: 16 << 20, maxNotifications: 100, maxTokens: 10_000)
    let body: [UInt8]
    let message: String
    switch kind {
    case "10 MB":
        body = Array(repeating: UInt8(ascii: "a"), count: 10 << 20)
        message = "Request body of 10485760 bytes is over the limit of 1048576 bytes."
    case "nesting 10,000 deep":
        body = Array(#"{"notifications":[{"data":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: 10_000)
        message = "Malformed JSON: invalid JSON at byte 87: arrays and objects nested more than 64 deep."
    case "1,000,000-element array":
        body = Array(#"{"notifications":[{"tokens":["#.utf8)
            + Array(Array(repeating: #""x","#, count: 999_999).joined().utf8) + Array(#""x"]}]}"#.utf8)
        message = "Number of tokens(1000000) over limit(10000)"
    case "a million-digit badge":
        body = Array(#"{"notifications":[{"badge":"#.utf8) + Array(repeating: UInt8(ascii: "9"), count: 1_000_000)
            + Array("}]}".utf8)
        message = "Malformed JSON: invalid JSON at byte 27: a number beyond the range of a double."
    case "a 300-digit badge":
        body = Array(#"{"notifications":[{"badge":"#.utf8) + Array(repeating: UInt8(ascii: "9"), count: 300)
            + Array("}]}".utf8)
        message = #"notifications[0].badge must be an integer between -9223372036854775808 and 9223372036854775807, not "9999999999999999999999999999999999999999…"."#
    default:
        body = Array(#"{"notifications":["#.utf8) + Array(Array(repeating: "{}", count: 100_000).joined(separator: ",").utf8)
            + Array("]}".utf8)
        message = "Number of notifications(100000) over limit(100)"
    }
    let usedLimits = kind == "10 MB" ? roomyLimits : limits
    let start = ContinuousClock.now
    #expect(throws: ProviderRequestError(message)) { try decodeGorushRequest(body, limits: usedLimits) }
    // A guard against a hang or quadratic work, not a speed target (speed is
    // the benchmark's): under AddressSanitizer on a loaded CI machine the
    // million-element array once took 5.1 s.
    #expect(ContinuousClock.now - start < .seconds(30))
}

@Test("a top-level async of true, false or null is the request's choice; absent, none",
      arguments: [(#"{"async":true,"notifications":[{}]}"#, true as Bool?), (#"{"async":false,"notifications":[{}]}"#, false),
                  (#"{"async":null,"notifications":[{}]}"#, nil), (#"{"notifications":[{}]}"#, nil)])
func asyncChoice(_ example: (body: String, async: Bool?)) throws {
    let request = try decodeGorushPushRequest(Array(example.body.utf8), limits: ProviderLimits(maxBodyBytes: 1 << 20, maxNotifications: 100, maxTokens: 10_000))
    #expect(request.async == example.async)
    #expect(request.notifications.count == 1)
}
