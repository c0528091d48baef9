// pyapns' three methods (pyapns/server.py, `APNSServer.xmlrpc_provision`,
// `xmlrpc_notify`, `xmlrpc_feedback`; its README for the client side) read
// from an XML-RPC call: what to do, or the fault pyapns' clients expect.
// No I/O: the caller keeps the provisioned apps, sends, and answers 404 and
// 500 itself (`PyAPNsFault.notProvisioned`, `.noConnection`).

import APNsCore
import RelayCore
import XMLRPC

/// What a pyapns call asks for.
public enum PyAPNsCall: Sendable, Equatable {
    case provision(PyAPNsProvision)
    case notify(PyAPNsNotify)
    case feedback(appID: String)
}

/// `provision(app_id, path_to_cert_or_cert, environment, timeout=15)`.
public struct PyAPNsProvision: Sendable, Equatable {
    public var appID: String
    public var certificate: PyAPNsCertificate
    /// pyapns' `sandbox` is APNs' development environment.
    public var environment: APNsEnvironment
    /// pyapns' connection timeout in seconds (its default: 15).
    public var timeoutSeconds: Int

    public init(appID: String, certificate: PyAPNsCertificate, environment: APNsEnvironment, timeoutSeconds: Int) {
        (self.appID, self.certificate) = (appID, certificate)
        (self.environment, self.timeoutSeconds) = (environment, timeoutSeconds)
    }
}

/// pyapns' `path_to_cert_or_cert`: PEM text when it contains
/// `BEGIN CERTIFICATE` (pyapns' `APNSClientContextFactory` test), else a
/// path to a PEM file.
public enum PyAPNsCertificate: Sendable, Equatable {
    case pem(String)
    case path(String)
}

/// `notify(app_id, token_or_token_list, aps_dict_or_list)`: tokens and
/// payloads paired by index.
public struct PyAPNsNotify: Sendable, Equatable {
    public var appID: String
    /// Device tokens, spaces removed, lowercased.
    public var tokens: [String]
    /// The APNs JSON payload for each token.
    public var payloads: [[UInt8]]
    /// The push type of each payload (`pyAPNsPushType(of:)`).
    public var pushTypes: [PyAPNsPushType]

    public init(appID: String, tokens: [String], payloads: [[UInt8]], pushTypes: [PyAPNsPushType]) {
        (self.appID, self.tokens, self.payloads, self.pushTypes) = (appID, tokens, payloads, pushTypes)
    }
}

/// The longest app id taken: ids appear in logs and metrics labels.
let maxAppIDBytes = 255
/// pyapns' default connection timeout, and the longest one taken (pyapns
/// took any; a timeout is a wait the relay holds a call open for).
let defaultTimeoutSeconds = 15
let maxTimeoutSeconds = 300

/// What `call` asks of pyapns, or the fault pyapns' clients would get.
public func pyAPNsCall(_ call: XMLRPCCall) throws(PyAPNsFault) -> PyAPNsCall {
    let params = call.params
    switch call.methodName {
    case "provision":
        guard (3...4).contains(params.count) else {
            throw .badArguments("provision takes 3 or 4 arguments (app_id, cert, environment, timeout), not \(params.count)")
        }
        let appID = try readAppID(params[0], method: "provision")
        let certificate = try readCertificate(params[1])
        guard case .string(let environmentName) = params[2] else {
            throw .badArguments("provision: environment must be a string, not \(params[2].typeName)")
        }
        let environment: APNsEnvironment
        switch environmentName {
        case "sandbox": environment = .development
        case "production": environment = .production
        default: throw .invalidEnvironment(environmentName)
        }
        var timeout = defaultTimeoutSeconds
        if params.count == 4 {
            guard case .int(let seconds) = params[3], (1...maxTimeoutSeconds).contains(seconds) else {
                throw .badArguments("provision: timeout must be an int of 1 to \(maxTimeoutSeconds) seconds")
            }
            timeout = seconds
        }
        return .provision(PyAPNsProvision(appID: appID, certificate: certificate, environment: environment,
                                          timeoutSeconds: timeout))
    case "notify":
        guard params.count == 3 else {
            throw .badArguments("notify takes 3 arguments (app_id, token_or_token_list, notification_or_list), not \(params.count)")
        }
        let appID = try readAppID(params[0], method: "notify")
        let (tokens, payloads, pushTypes) = try readNotifications(tokens: params[1], notifications: params[2])
        return .notify(PyAPNsNotify(appID: appID, tokens: tokens, payloads: payloads, pushTypes: pushTypes))
    case "feedback":
        guard params.count == 1 else { throw .badArguments("feedback takes 1 argument (app_id), not \(params.count)") }
        return .feedback(appID: try readAppID(params[0], method: "feedback"))
    default:
        throw .procedureNotFound(call.methodName)
    }
}

/// An app id: pyapns took any value as a dictionary key; here a string of
/// 1 to 255 bytes without control characters, as it goes into logs.
private func readAppID(_ value: XMLRPCValue, method: String) throws(PyAPNsFault) -> String {
    guard case .string(let appID) = value else {
        throw .badArguments("\(method): app_id must be a string, not \(value.typeName)")
    }
    guard !appID.isEmpty, appID.utf8.count <= maxAppIDBytes,
          !appID.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
        throw .badArguments("\(method): app_id must be 1 to \(maxAppIDBytes) bytes without control characters")
    }
    return appID
}

/// The certificate argument: a string (as pyapns' Python 2 clients sent
/// it), or base64 holding UTF-8 (as Python 3's xmlrpc.client sends bytes
/// read from a PEM file).
private func readCertificate(_ value: XMLRPCValue) throws(PyAPNsFault) -> PyAPNsCertificate {
    let text: String
    switch value {
    case .string(let string): text = string
    case .base64(let bytes):
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw .badArguments("provision: the certificate in base64 is not UTF-8 PEM text")
        }
        text = string
    default:
        throw .badArguments("provision: cert must be a string (PEM text or a path), not \(value.typeName)")
    }
    guard !text.isEmpty else { throw .badArguments("provision: cert is empty") }
    return text.contains("BEGIN CERTIFICATE") ? .pem(text) : .path(text)
}

/// notify's tokens and payloads: one token (a string) and one struct, or
/// two arrays of equal length. pyapns zipped the two lists and so silently
/// dropped the extra items of the longer one; here unequal lengths are a
/// fault and nothing is sent. Any bad item faults the whole
/// call, naming its index, so a client never has half a batch sent.
private func readNotifications(tokens: XMLRPCValue, notifications: XMLRPCValue)
    throws(PyAPNsFault) -> (tokens: [String], payloads: [[UInt8]], pushTypes: [PyAPNsPushType]) {
    let tokenValues: [XMLRPCValue], notificationValues: [XMLRPCValue]
    switch (tokens, notifications) {
    case (.string, .structure):
        (tokenValues, notificationValues) = ([tokens], [notifications])
    case (.array(let tokenList), .array(let notificationList)):
        guard tokenList.count == notificationList.count else {
            throw .badArguments("notify: \(tokenList.count) tokens but \(notificationList.count) notifications; "
                + "the lists must have the same length, and nothing was sent")
        }
        (tokenValues, notificationValues) = (tokenList, notificationList)
    default:
        throw .badArguments("notify takes a token (string) and a notification (struct), or a list of tokens and "
            + "a list of notifications, not \(tokens.typeName) and \(notifications.typeName)")
    }
    var normalized: [String] = []
    var payloads: [[UInt8]] = []
    var pushTypes: [PyAPNsPushType] = []
    normalized.reserveCapacity(tokenValues.count)
    payloads.reserveCapacity(tokenValues.count)
    pushTypes.reserveCapacity(tokenValues.count)
    for (index, (tokenValue, notification)) in zip(tokenValues, notificationValues).enumerated() {
        guard case .string(let text) = tokenValue else {
            throw .badArguments("notify: token at index \(index) must be a string, not \(tokenValue.typeName)")
        }
        // pyapns: `t.replace(' ', '')` (tokens copied as "<abcd 1234 …>").
        guard let token = deviceToken(fromHex: text.replacingSpaces()) else {
            throw .badArguments("notify: token at index \(index) is not a device token (64 to 200 hex digits)")
        }
        normalized.append(token)
        payloads.append(try apnsPayload(notification, index: index))
        pushTypes.append(pyAPNsPushType(of: notification))
    }
    return (normalized, payloads, pushTypes)
}

extension String {
    /// The text without U+0020 (only the space, as pyapns removed it).
    fileprivate func replacingSpaces() -> String {
        String(unicodeScalars.filter { $0 != " " }.map(Character.init))
    }
}
