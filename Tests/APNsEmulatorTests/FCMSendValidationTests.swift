@testable import APNsEmulator
import FCMCore
import JSON
import Testing

@Suite("FCM send validation")
struct FCMSendValidationTests {
    static let path = "/v1/projects/\(FCMFixture.project)/messages:send"
    static let bearer = "ya29.valid"

    /// One request that breaks one rule, and FCM's answer to it.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var method = "POST"
        var path = FCMSendValidationTests.path
        var authorization: String? = "Bearer " + FCMSendValidationTests.bearer
        var contentType: String? = "application/json"
        var body: String
        var status = 400
        var rpcStatus = "INVALID_ARGUMENT"
        /// FcmError's errorCode (nil: none in the answer).
        var errorCode: String? = nil
        /// The BadRequest detail's field (nil: no such detail).
        var field: String? = nil
        var testDescription: String { name }
    }

    static func body(_ message: String) -> String { #"{"message":\#(message)}"# }
    static let token = FCMFixture.registrationToken

    static let cases: [Case] = [
        Case(name: "GET", method: "GET", body: "", status: 404, rpcStatus: "NOT_FOUND"),
        Case(name: "another path", path: "/v1/projects/x/messages:batchSend", body: "", status: 404, rpcStatus: "NOT_FOUND"),
        Case(name: "no authorization", authorization: nil, body: "{}", status: 401, rpcStatus: "UNAUTHENTICATED"),
        Case(name: "basic authorization", authorization: "Basic abc", body: "{}", status: 401, rpcStatus: "UNAUTHENTICATED"),
        Case(name: "a token never issued (or expired)", authorization: "Bearer ya29.other", body: "{}", status: 401,
             rpcStatus: "UNAUTHENTICATED"),
        Case(name: "another project's path", path: "/v1/projects/other-project/messages:send", body: "{}", status: 403,
             rpcStatus: "PERMISSION_DENIED"),
        Case(name: "a form body", contentType: "application/x-www-form-urlencoded", body: "a=b", field: ""),
        Case(name: "not JSON", body: "{", field: ""),
        Case(name: "an unknown top-level name", body: #"{"message":{"token":"\#(token)"},"dry_run":true}"#, field: ""),
        Case(name: "no message", body: "{}", errorCode: "INVALID_ARGUMENT", field: "message"),
        Case(name: "no target", body: body(#"{"data":{"a":"b"}}"#), errorCode: "INVALID_ARGUMENT", field: "message"),
        Case(name: "two targets", body: body(#"{"token":"\#(token)","topic":"news"}"#), field: "message"),
        Case(name: "an unknown name in message", body: body(#"{"token":"\#(token)","priority":"high"}"#),
             field: "message"),
        Case(name: "an unknown name in android", body: body(#"{"token":"\#(token)","android":{"urgency":"high"}}"#),
             field: "message.android"),
        Case(name: "an unknown name in notification", body: body(#"{"token":"\#(token)","notification":{"icon":"x"}}"#),
             field: "message.notification"),
        Case(name: "a token of a wrong character", body: body(#"{"token":"abc/def"}"#), errorCode: "INVALID_ARGUMENT",
             field: "message.token"),
        Case(name: "an empty token", body: body(#"{"token":""}"#), errorCode: "INVALID_ARGUMENT", field: "message.token"),
        Case(name: "a token that is a number", body: body(#"{"token":12}"#), field: "message.token"),
        Case(name: "a bad topic", body: body(#"{"topic":"a b"}"#), errorCode: "INVALID_ARGUMENT", field: "message.topic"),
        Case(name: "a data value that is a number", body: body(#"{"token":"\#(token)","data":{"a":"b","n":1}}"#),
             field: "message.data[1].value"),
        Case(name: "data that is an array", body: body(#"{"token":"\#(token)","data":["a"]}"#), field: "message.data"),
        Case(name: "a reserved data key", body: body(#"{"token":"\#(token)","data":{"google.x":"1"}}"#),
             errorCode: "INVALID_ARGUMENT", field: "message.data"),
        Case(name: "data over 4096 bytes",
             body: body(#"{"token":"\#(token)","data":{"p":"\#(String(repeating: "a", count: 4096))"}}"#),
             errorCode: "INVALID_ARGUMENT"),
        Case(name: "data and a title over 4096 bytes together",
             body: body(#"{"token":"\#(token)","data":{"p":"\#(String(repeating: "a", count: 4000))"},"notification":{"title":"\#(String(repeating: "b", count: 100))"}}"#),
             errorCode: "INVALID_ARGUMENT"),
        Case(name: "a ttl without s", body: body(#"{"token":"\#(token)","android":{"ttl":"60"}}"#),
             field: "message.android.ttl"),
        Case(name: "a ttl that is a number", body: body(#"{"token":"\#(token)","android":{"ttl":60}}"#),
             field: "message.android.ttl"),
        Case(name: "a ttl over four weeks", body: body(#"{"token":"\#(token)","android":{"ttl":"2419201s"}}"#),
             errorCode: "INVALID_ARGUMENT", field: "message.android.ttl"),
        Case(name: "a priority FCM does not know", body: body(#"{"token":"\#(token)","android":{"priority":"urgent"}}"#),
             field: "message.android.priority"),
        Case(name: "a collapse_key that is a number", body: body(#"{"token":"\#(token)","android":{"collapse_key":1}}"#),
             field: "message.android.collapse_key"),
        Case(name: "a notification title that is a number",
             body: body(#"{"token":"\#(token)","notification":{"title":1}}"#), field: "message.notification.title"),
        Case(name: "android that is a string", body: body(#"{"token":"\#(token)","android":"high"}"#),
             field: "message.android"),
    ]

    static func validate(method: String = "POST", path: String = path, authorization: String?,
                         contentType: String? = "application/json",
                         body: String) throws -> Result<ValidatedFCMMessage, FCMRejection> {
        let account = try FCMFixture.trusted()
        var headers: [(name: String, value: String)] = []
        if let authorization { headers.append(("authorization", authorization)) }
        if let contentType { headers.append(("content-type", contentType)) }
        return FCMSendValidator.validate(method: method, path: path, headers: headers, body: Array(body.utf8)) {
            $0 == bearer ? FCMIssuedTokens.Grant(account: account, expiresAt: .max) : nil
        }
    }

    @Test("each refusal, in FCM's shape", arguments: cases)
    func refusal(_ example: Case) throws {
        let result = try Self.validate(method: example.method, path: example.path, authorization: example.authorization,
                                       contentType: example.contentType, body: example.body)
        guard case .failure(let rejection) = result else {
            Issue.record("accepted")
            return
        }
        #expect(rejection.status == example.status)
        #expect(rejection.rpcStatus == example.rpcStatus)
        #expect(rejection.errorCode == example.errorCode)
        #expect(rejection.fieldViolations.first?.field == example.field)
        // FCMCore reads the body back as the relay will.
        let read = try #require(rejection.readByRelay)
        #expect(read.reason == FCMReason(example.errorCode ?? example.rpcStatus))
        #expect(read.namesToken == (example.field == "message.token"))
    }

    @Test("the relay's messages are taken, each target kind and every Android option")
    func accepted() throws {
        let token = Self.token
        for message in [
            #"{"token":"\#(token)","data":{"p":"abc","k":"d","s":"e","x":"f"},"android":{"ttl":"0s","collapse_key":"t","priority":"normal"}}"#,
            #"{"token":"\#(token)","data":{},"android":{"ttl":"2419200s","priority":"HIGH"},"notification":{"title":"🎺","body":"b"}}"#,
            #"{"topic":"/topics/news","data":{"a":"b"}}"#,
            #"{"condition":"'a' in topics","android":{"ttl":"3.5s","direct_boot_ok":true}}"#,
            #"{"token":"\#(token)","data":{"p":"\#(String(repeating: "a", count: 4095))"}}"#,
        ] {
            let result = try Self.validate(authorization: "bearer " + Self.bearer, contentType: "application/json; charset=utf-8",
                                           body: Self.body(message))
            #expect((try? result.get()) != nil, "\(message)")
        }
        let validated = try Self.validate(authorization: "Bearer " + Self.bearer, body: String(decoding: FCMFixture.message(), as: UTF8.self)).get()
        #expect(validated.token == token)
        #expect(validated.projectID == FCMFixture.project)
        #expect(validated.account.account.privateKeyID == FCMFixture.keyID)
        #expect(validated.message["android"]?["ttl"] == .string("60s"))
        #expect(!validated.validateOnly)
    }

    @Test("the error body is google.rpc.Status with FcmError and BadRequest details")
    func errorBody() {
        let body = String(decoding: FCMRejection.invalidToken.body, as: UTF8.self)
        #expect(body == #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","#
            + #""status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","#
            + #""errorCode":"INVALID_ARGUMENT"},{"@type":"type.googleapis.com/google.rpc.BadRequest","#
            + #""fieldViolations":[{"field":"message.token","description":"The registration token is not a valid FCM "#
            + #"registration token"}]}]}}"#)
        #expect(String(decoding: FCMRejection.unauthenticated.body, as: UTF8.self).hasSuffix(#""status":"UNAUTHENTICATED"}}"#))
    }
}
