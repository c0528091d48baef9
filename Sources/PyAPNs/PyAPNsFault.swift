// pyapns' faults (pyapns/server.py, `APNSServer`) and those of Twisted's
// XML-RPC resource that hosted it (twisted/web/xmlrpc.py: NOT_FOUND 8001,
// FAILURE 8002), with the same codes, so a pyapns client's handling (its
// client.py maps 404 to UnknownAppID) keeps working. Where pyapns crashed
// into Twisted's bare `Fault(8002, "error")` (a wrong argument), the code
// is kept and the text says what was wrong. Texts never carry a token, a
// certificate or a payload.

import XMLRPC

/// An XML-RPC fault for a pyapns call.
public struct PyAPNsFault: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int
    public let faultString: String

    public init(code: Int, faultString: String) {
        (self.code, self.faultString) = (code, faultString)
    }

    public var description: String { "XML-RPC fault \(code): \(faultString)" }

    /// The methodResponse carrying this fault.
    public var response: [UInt8] { encodeXMLRPCFault(code: code, faultString: faultString) }

    /// notify or feedback for an app id nobody provisioned (pyapns'
    /// `apns_service`); produced by the caller, which knows the apps.
    public static let notProvisioned = PyAPNsFault(code: 404, faultString: "The app_id specified has not been provisioned.")

    /// notify could not reach APNs (pyapns' `_finish_err`); produced by the
    /// caller, which does the sending.
    public static let noConnection = PyAPNsFault(code: 500, faultString: "Connection to the APNS server could not be made.")

    /// provision with an environment other than `sandbox` or `production`
    /// (pyapns' text, with the value it was given).
    static func invalidEnvironment(_ environment: String) -> PyAPNsFault {
        PyAPNsFault(code: 401, faultString: "Invalid environment provided `\(shortened(environment))`. Valid "
            + "environments are `sandbox` and `production`")
    }

    /// A method pyapns does not have (Twisted's `NoSuchFunction` text).
    static func procedureNotFound(_ methodName: String) -> PyAPNsFault {
        PyAPNsFault(code: 8001, faultString: "procedure \(shortened(methodName)) not found")
    }

    /// A call with the wrong number or kinds of arguments.
    static func badArguments(_ reason: String) -> PyAPNsFault {
        PyAPNsFault(code: 8002, faultString: reason)
    }

    /// A body that is not an XML-RPC call (Twisted's text before the reason).
    public static func undecodable(_ error: XMLRPCError) -> PyAPNsFault {
        PyAPNsFault(code: 8002, faultString: "Can't deserialize input: \(error)")
    }
}

/// A client's text as a fault shows it: one line of at most 32 characters,
/// too short to hold a whole device token (64 hex digits or more) that a
/// client put in the wrong argument (found by the xmlrpc fuzzer).
func shortened(_ text: String) -> String {
    let line = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
    return line.count <= 32 ? line : String(line.prefix(32)) + "…"
}
