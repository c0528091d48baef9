// FCM HTTP v1's error answer: a google.rpc.Status in JSON (AIP-193), with
// an FcmError detail carrying FCM's errorCode and, for a bad argument, a
// google.rpc.BadRequest detail naming the fields:
//
//   {"error":{"code":400,"message":"…","status":"INVALID_ARGUMENT","details":[
//     {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},
//     {"@type":"type.googleapis.com/google.rpc.BadRequest",
//      "fieldViolations":[{"field":"message.token","description":"…"}]}]}}

import JSON

/// One refused message: the status, google.rpc code and message FCM
/// sends, its FcmError code (nil: the answer carries none, as FCM's to a
/// bad access token) and the fields a BadRequest detail names.
public struct FCMRejection: Error, Sendable, Hashable {
    public struct FieldViolation: Sendable, Hashable {
        public var field: String
        public var description: String
    }

    public var status: Int
    /// google.rpc.Code's name (`error.status`).
    public var rpcStatus: String
    public var message: String
    /// FcmError's `errorCode`.
    public var errorCode: String?
    public var fieldViolations: [FieldViolation]
    /// Seconds sent as `retry-after` (RFC 9110 §10.2.3).
    public var retryAfter: Int?

    public init(status: Int, rpcStatus: String, message: String, errorCode: String?,
                fieldViolations: [FieldViolation] = [], retryAfter: Int? = nil) {
        self.status = status
        self.rpcStatus = rpcStatus
        self.message = message
        self.errorCode = errorCode
        self.fieldViolations = fieldViolations
        self.retryAfter = retryAfter
    }

    /// 400 INVALID_ARGUMENT about `field` (an FcmError and a BadRequest
    /// detail, as FCM sends for a message it cannot take).
    public static func invalidArgument(field: String, _ description: String) -> FCMRejection {
        FCMRejection(status: 400, rpcStatus: "INVALID_ARGUMENT", message: description, errorCode: "INVALID_ARGUMENT",
                     fieldViolations: [FieldViolation(field: field, description: description)])
    }

    /// FCM's words for a token it does not take.
    public static let invalidTokenMessage = "The registration token is not a valid FCM registration token"
    public static let invalidToken = invalidArgument(field: "message.token", invalidTokenMessage)

    /// A missing, unknown or expired access token: google.rpc's 401, no
    /// FcmError (Google's front end answers before FCM sees the message).
    public static let unauthenticated = FCMRejection(
        status: 401, rpcStatus: "UNAUTHENTICATED",
        message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
            + "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        errorCode: nil)

    /// An access token of another project's account.
    public static func permissionDenied(project: String) -> FCMRejection {
        FCMRejection(status: 403, rpcStatus: "PERMISSION_DENIED",
                     message: "Permission 'cloudmessaging.messages.create' denied on resource "
                        + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).",
                     errorCode: nil)
    }

    public static let notFound = FCMRejection(status: 404, rpcStatus: "NOT_FOUND",
                                              message: "Requested entity was not found.", errorCode: nil)

    /// The answer's body.
    public var body: [UInt8] {
        var details: [JSONValue] = []
        if let errorCode {
            details.append(.object([
                JSONMember(name: "@type", value: .string("type.googleapis.com/google.firebase.fcm.v1.FcmError")),
                JSONMember(name: "errorCode", value: .string(errorCode)),
            ]))
        }
        if !fieldViolations.isEmpty {
            let violations = fieldViolations.map { violation -> JSONValue in
                .object([JSONMember(name: "field", value: .string(violation.field)),
                         JSONMember(name: "description", value: .string(violation.description))])
            }
            details.append(.object([
                JSONMember(name: "@type", value: .string("type.googleapis.com/google.rpc.BadRequest")),
                JSONMember(name: "fieldViolations", value: .array(violations)),
            ]))
        }
        var error: [JSONMember] = [
            JSONMember(name: "code", value: .number(String(status))),
            JSONMember(name: "message", value: .string(message)),
            JSONMember(name: "status", value: .string(rpcStatus)),
        ]
        if !details.isEmpty { error.append(JSONMember(name: "details", value: .array(details))) }
        var body: [UInt8] = []
        JSONValue.object([JSONMember(name: "error", value: .object(error))]).appendJSON(to: &body)
        return body
    }
}
