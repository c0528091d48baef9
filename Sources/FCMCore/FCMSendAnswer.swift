// FCM's answer to `POST /v1/projects/<project>/messages:send`:
//
//   200 {"name":"projects/<project>/messages/<id>"}
//   4xx/5xx, google.rpc.Status in JSON (AIP-193):
//   {"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND",
//             "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError",
//                         "errorCode":"UNREGISTERED"}]}}
//   and for a bad argument also a BadRequest detail naming the field:
//   {"@type":"type.googleapis.com/google.rpc.BadRequest",
//    "fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}
//
// A front end before FCM may answer with HTML (a 502 page): the status
// alone then decides.

import JSON

/// What FCM answered.
public enum FCMSendAnswer: Sendable, Equatable {
    /// 200: FCM took the message. Its body (the message's name) is not
    /// needed to know that, and is not parsed (`fcmMessageName` reads it).
    case sent
    case failed(FCMError)

    /// Error bodies longer than this are not parsed (FCM's are under 1 KB);
    /// the status alone decides.
    static let maxErrorBodyBytes = 16_384

    public init(status: Int, body: [UInt8]) {
        guard status != 200 else {
            self = .sent
            return
        }
        self = .failed(FCMError(status: status, body: body))
    }
}

/// An error answer, read.
public struct FCMError: Sendable, Equatable, CustomStringConvertible {
    public let httpStatus: Int
    /// The FcmError detail's `errorCode`, else `error.status`, else the HTTP
    /// status's google.rpc code.
    public let reason: FCMReason
    /// A BadRequest detail has a field violation of `message.token`, or the
    /// message is FCM's documented one for an invalid token: FCM says the
    /// token itself is bad.
    public let namesToken: Bool
    /// `error.message`, as sent.
    public let message: String?

    public init(httpStatus: Int, reason: FCMReason, namesToken: Bool = false, message: String? = nil) {
        (self.httpStatus, self.reason, self.namesToken, self.message) = (httpStatus, reason, namesToken, message)
    }

    /// The message FCM's error-code documentation shows for an invalid
    /// registration token, which comes without a BadRequest detail.
    static let invalidTokenMessage = "The registration token is not a valid FCM registration token"

    init(status: Int, body: [UInt8]) {
        let document = body.count <= FCMSendAnswer.maxErrorBodyBytes ? try? parseStrictJSON(body) : nil
        guard let error = document?["error"], case .object = error else {
            self.init(httpStatus: status, reason: FCMReason(httpStatus: status))
            return
        }
        var message: String? = nil
        if case .string(let text)? = error["message"] { message = text }
        var reason: FCMReason? = nil
        if case .string(let text)? = error["status"] { reason = FCMReason(text) }
        var namesToken = message == Self.invalidTokenMessage
        if case .array(let details)? = error["details"] {
            for detail in details {
                guard case .string(let type)? = detail["@type"] else { continue }
                if type.hasSuffix("/google.firebase.fcm.v1.FcmError"), case .string(let code)? = detail["errorCode"] {
                    reason = FCMReason(code)
                } else if type.hasSuffix("/google.rpc.BadRequest"), case .array(let violations)? = detail["fieldViolations"],
                          violations.contains(where: { $0["field"] == .string("message.token") }) {
                    namesToken = true
                }
            }
        }
        self.init(httpStatus: status, reason: reason ?? FCMReason(httpStatus: status), namesToken: namesToken,
                  message: message)
    }

    /// `<status> <reason>[ about message.token][ "<message>"]`, one line,
    /// the foreign text quoted (40 characters at most).
    public var description: String {
        "\(httpStatus) \(reasonText)" + (namesToken ? " about message.token" : "")
            + (message.map { " " + quotedForMessage($0) } ?? "")
    }

    private var reasonText: String {
        if case .other(let text) = reason { return quotedForMessage(text) }
        return reason.text
    }
}

/// The `name` of a 200 answer (`projects/<project>/messages/<id>`), for a
/// log line; nil when the body has none.
public func fcmMessageName(_ body: [UInt8]) -> String? {
    guard body.count <= FCMSendAnswer.maxErrorBodyBytes, case .string(let name)? = (try? parseStrictJSON(body))?["name"]
    else { return nil }
    return name
}
