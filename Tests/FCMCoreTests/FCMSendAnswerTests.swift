// FCM's answers to a send, from the shapes Google documents and clients
// record (google.rpc.Status with FcmError and BadRequest details), and
// hostile ones.

import FCMCore
import Testing

/// Answers as FCM sends them.
enum FCMAnswers {
    static let sent = #"{"name":"projects/toot-relay-test/messages/0:1700000000000000%31bd1c9631bd1c96"}"#
    static let unregistered = """
        {
          "error": {
            "code": 404,
            "message": "Requested entity was not found.",
            "status": "NOT_FOUND",
            "details": [{
              "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
              "errorCode": "UNREGISTERED"
            }]
          }
        }
        """
    /// An invalid token, with a BadRequest detail naming it.
    static let invalidToken = """
        {"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT",
        "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},
        {"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token",
        "description":"Invalid registration token"}]}]}}
        """
    /// An invalid token as FCM's error-code page shows it: no BadRequest.
    static let invalidTokenDocumented = """
        {"error":{"code":400,"message":"The registration token is not a valid FCM registration token",
        "status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError",
        "errorCode":"INVALID_ARGUMENT"}]}}
        """
    static let invalidData = """
        {"error":{"code":400,"message":"Invalid value at 'message.data[0].value' (TYPE_STRING), 12",
        "status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations":[{"field":"message.data[0].value",
        "description":"Invalid value at 'message.data[0].value' (TYPE_STRING), 12"}]}]}}
        """
    static let missingRecipient = """
        {"error":{"code":400,"message":"Recipient of the message is not set.","status":"INVALID_ARGUMENT",
        "details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message",
        "description":"Recipient of the message is not set."}]},
        {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"}]}}
        """
    static let tooLarge = #"{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}"#
    static let senderIDMismatch = """
        {"error":{"code":403,"message":"SenderId mismatch","status":"PERMISSION_DENIED",
        "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"SENDER_ID_MISMATCH"}]}}
        """
    static let quotaExceeded = """
        {"error":{"code":429,"message":"Quota exceeded for quota metric 'Send requests'.","status":"RESOURCE_EXHAUSTED",
        "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"QUOTA_EXCEEDED"}]}}
        """
    static let internalError = """
        {"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL",
        "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INTERNAL"}]}}
        """
    static let unavailable = """
        {"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE",
        "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNAVAILABLE"}]}}
        """
    static let thirdPartyAuth = """
        {"error":{"code":401,"message":"Auth error from APNS or Web Push Service","status":"UNAUTHENTICATED",
        "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"THIRD_PARTY_AUTH_ERROR"}]}}
        """
    static let unauthenticated = """
        {"error":{"code":401,"message":"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}
        """
    static let permissionDenied = """
        {"error":{"code":403,"message":"Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/toot-relay-test' (or it may not exist).","status":"PERMISSION_DENIED",
        "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"IAM_PERMISSION_DENIED","domain":"cloudresourcemanager.googleapis.com"}]}}
        """
    static let projectNotFound = #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#
    /// What a Google front end sends for a 502: HTML.
    static let frontEnd502 = "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <title>Error 502 (Server Error)!!1</title>\n"
        + "  <p><b>502.</b> <ins>That’s an error.</ins>\n  <p>The server encountered a temporary error and could not complete your request.<p>Please try again in 30 seconds.  <ins>That’s all we know.</ins>\n"
}

@Suite("FCM's answer to a send")
struct FCMSendAnswerTests {
    @Test("answers are read into status, reason, whether they name the token, message", arguments: [
        (200, FCMAnswers.sent, FCMSendAnswer.sent),
        (200, "not even JSON", .sent),
        (404, FCMAnswers.unregistered, .failed(FCMError(httpStatus: 404, reason: .unregistered,
                                                        message: "Requested entity was not found."))),
        (400, FCMAnswers.invalidToken, .failed(FCMError(httpStatus: 400, reason: .invalidArgument, namesToken: true,
                                                        message: "Request contains an invalid argument."))),
        (400, FCMAnswers.invalidTokenDocumented, .failed(FCMError(
            httpStatus: 400, reason: .invalidArgument, namesToken: true,
            message: "The registration token is not a valid FCM registration token"))),
        (400, FCMAnswers.invalidData, .failed(FCMError(httpStatus: 400, reason: .invalidArgument,
                                                       message: "Invalid value at 'message.data[0].value' (TYPE_STRING), 12"))),
        (400, FCMAnswers.missingRecipient, .failed(FCMError(httpStatus: 400, reason: .invalidArgument,
                                                            message: "Recipient of the message is not set."))),
        (400, FCMAnswers.tooLarge, .failed(FCMError(httpStatus: 400, reason: .invalidArgument,
                                                    message: "Request contains an invalid argument."))),
        (403, FCMAnswers.senderIDMismatch, .failed(FCMError(httpStatus: 403, reason: .senderIDMismatch,
                                                            message: "SenderId mismatch"))),
        (429, FCMAnswers.quotaExceeded, .failed(FCMError(httpStatus: 429, reason: .quotaExceeded,
                                                         message: "Quota exceeded for quota metric 'Send requests'."))),
        (500, FCMAnswers.internalError, .failed(FCMError(httpStatus: 500, reason: .internalError,
                                                         message: "Internal error encountered."))),
        (503, FCMAnswers.unavailable, .failed(FCMError(httpStatus: 503, reason: .unavailable,
                                                       message: "The service is currently unavailable."))),
        (401, FCMAnswers.thirdPartyAuth, .failed(FCMError(httpStatus: 401, reason: .thirdPartyAuthError,
                                                          message: "Auth error from APNS or Web Push Service"))),
        (404, FCMAnswers.projectNotFound, .failed(FCMError(httpStatus: 404, reason: .notFound,
                                                           message: "Requested entity was not found."))),
        (502, FCMAnswers.frontEnd502, .failed(FCMError(httpStatus: 502, reason: .other("HTTP 502")))),
        (503, "", .failed(FCMError(httpStatus: 503, reason: .unavailable))),
        (401, "", .failed(FCMError(httpStatus: 401, reason: .unauthenticated))),
        (403, "[]", .failed(FCMError(httpStatus: 403, reason: .permissionDenied))),
        (404, #"{"error":"NOT_FOUND"}"#, .failed(FCMError(httpStatus: 404, reason: .notFound))),
        (201, "{}", .failed(FCMError(httpStatus: 201, reason: .other("HTTP 201")))),
    ] as [(Int, String, FCMSendAnswer)])
    func read(status: Int, body: String, expected: FCMSendAnswer) {
        #expect(FCMSendAnswer(status: status, body: Array(body.utf8)) == expected)
    }

    @Test("details of the wrong shape or unknown type change nothing", arguments: [
        #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":"message.token"}}"#,
        #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[1,null,"x",{"@type":7},{"fieldViolations":[{"field":"message.token"}]}]}}"#,
        #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":{"field":"message.token"}}]}}"#,
        #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token.x"},{"field":["message.token"]}]}]}}"#,
        #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":404}]}}"#,
        #"{"error":{"code":"400","status":"INVALID_ARGUMENT","message":{"text":"The registration token is not a valid FCM registration token"}}}"#,
    ])
    func oddDetails(body: String) {
        #expect(FCMSendAnswer(status: 400, body: Array(body.utf8)) == .failed(FCMError(httpStatus: 400, reason: .invalidArgument)))
    }

    @Test("an unknown code is kept; the FcmError detail outranks error.status", arguments: [
        (#"{"error":{"status":"DEADLINE_EXCEEDED"}}"#, FCMReason.other("DEADLINE_EXCEEDED")),
        (#"{"error":{"status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"APNS_AUTH_ERROR"}]}}"#,
         .other("APNS_AUTH_ERROR")),
        (#"{"error":{"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNSPECIFIED_ERROR"}]}}"#,
         .unspecifiedError),
        (#"{"error":{"details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}],"status":"NOT_FOUND"}}"#,
         .unregistered),
    ])
    func reasonPrecedence(body: String, reason: FCMReason) {
        #expect(FCMSendAnswer(status: 404, body: Array(body.utf8)) == .failed(FCMError(httpStatus: 404, reason: reason)))
    }

    @Test("hostile bodies fall back to the status", arguments: [
        String(repeating: "[", count: 10_000),
        #"{"error":{"status":"UNREGISTERED","status":"UNREGISTERED"}}"#,
        #"{"error":{"status":"UNREGISTERED"}} trailing"#,
        "{\"error\":{\"status\":\"UNREGISTERED\u{0}\"}}",
        #"{"error":{"status":"UNREGISTERED","message":""# + String(repeating: "x", count: 16_384) + #""}}"#,
        "\u{FEFF}" + FCMAnswers.unregistered,
    ])
    func hostile(body: String) {
        #expect(FCMSendAnswer(status: 404, body: Array(body.utf8)) == .failed(FCMError(httpStatus: 404, reason: .notFound)))
    }

    @Test("every reason's text reads back to it", arguments: [
        FCMReason.unspecifiedError, .invalidArgument, .unregistered, .senderIDMismatch, .quotaExceeded, .unavailable,
        .internalError, .thirdPartyAuthError, .unauthenticated, .permissionDenied, .notFound, .resourceExhausted,
        .other("SOMETHING_NEW"),
    ])
    func reasonText(reason: FCMReason) {
        #expect(FCMReason(reason.text) == reason)
        #expect(reason.description == reason.text)
    }

    @Test("an error's description is one line, foreign text quoted")
    func errorDescription() {
        #expect(FCMError(httpStatus: 404, reason: .unregistered, message: "Requested entity was not found.").description
            == #"404 UNREGISTERED "Requested entity was not found.""#)
        #expect(FCMError(httpStatus: 400, reason: .invalidArgument, namesToken: true).description
            == "400 INVALID_ARGUMENT about message.token")
        #expect(FCMError(httpStatus: 400, reason: .other("X\nY"), message: "a\r\nb").description == #"400 "X?Y" "a??b""#)
    }

    @Test("a 200's message name is read when there is one", arguments: [
        (FCMAnswers.sent, "projects/toot-relay-test/messages/0:1700000000000000%31bd1c9631bd1c96"),
        ("{}", nil), ("", nil), (#"{"name":7}"#, nil),
    ] as [(String, String?)])
    func messageName(body: String, name: String?) {
        #expect(fcmMessageName(Array(body.utf8)) == name)
    }
}
