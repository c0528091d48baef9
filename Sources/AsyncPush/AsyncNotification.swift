import APNsCore
import HTTPCore
import RelayCore

/// One notification an asynchronous `/api/push` accepted, from the 200 to
/// its end: what any instance needs to send it and to word its failed-push
/// log, by value, naming its app by id. The in-process queue holds it as it
/// is; a fleet's queue holds its stream fields (`fields`), read back
/// defensively (`init(fields:)`): another instance, an older version or
/// anyone who can write to Redis may have written the entry. The consuming
/// instance looks the app up in its own apps when it delivers.
public struct AsyncNotification: Sendable, Equatable {
    public var appID: String
    public var environment: APNsEnvironment
    /// As the sender wrote it (the failed-push log's).
    public var token: String
    /// APNs' form (the request path's, the feedback list's).
    public var deviceToken: String
    /// The APNs headers without `apns-topic` (the app supplies it, as for
    /// any route).
    public var headers: [HTTPField]
    public var payload: [UInt8]
    public var apnsID: String
    /// The gorush notification's `notif_id`, platform and message: what its
    /// failed-push log names. Nil: the log has none (message empty).
    public var source: FailedPushSource.Notification?
    /// When the request was answered 200, milliseconds since the epoch.
    public var acceptedAt: Int64
    /// Tries made (0: none yet).
    public var tries: Int
    /// Where a fleet's queue holds it (the stream entry's id), to
    /// acknowledge when done; nil in the in-process queue. Not a stream
    /// field: the entry's id is the stream's.
    public var receipt: String?

    public init(appID: String, environment: APNsEnvironment, token: String, deviceToken: String,
                headers: [HTTPField], payload: [UInt8], apnsID: String, source: FailedPushSource.Notification?,
                acceptedAt: Int64, tries: Int = 0) {
        (self.appID, self.environment, self.token, self.deviceToken) = (appID, environment, token, deviceToken)
        (self.headers, self.payload, self.apnsID, self.source) =
            (headers.filter { $0.name != "apns-topic" }, payload, apnsID, source)
        (self.acceptedAt, self.tries) = (acceptedAt, tries)
    }

    /// The asynchronous form of a notification the accept path built for `appID`.
    public init(_ notification: APNsNotification, appID: String, token: String,
                source: FailedPushSource.Notification?, acceptedAt: Int64) {
        self.init(appID: appID, environment: notification.environment, token: token,
                  deviceToken: notification.deviceToken, headers: notification.headers, payload: notification.payload,
                  apnsID: notification.apnsID, source: source, acceptedAt: acceptedAt)
    }

    /// APNs' request for `app`, as the delivering instance knows it; nil
    /// when that app does not serve the environment.
    public func request(for app: RelayApp) -> APNsNotification? {
        guard let credential = app.credential(for: environment) else { return nil }
        return APNsNotification(to: deviceToken, environment: environment, credential: credential,
                                headers: APNsRequestHeaders(topic: app.topic, headers), payload: payload,
                                apnsID: apnsID, ttl: 0)
    }

    /// `apns-expiration`, seconds since the epoch; nil: none (or not a
    /// number, which APNs refuses: the policy then bounds only the tries).
    public var expiration: Int64? {
        headers.first { $0.name == "apns-expiration" }.flatMap { Int64($0.value) }
    }

    /// What the failed-push log names besides the token.
    public var failedPushSource: FailedPushSource { FailedPushSource(notification: source) }

    // MARK: the stream fields

    /// The format's version: an entry of another is refused whole, never
    /// half read.
    static let version = "1"

    /// Limits a decoded entry keeps to, whoever wrote it: a payload no
    /// larger than APNs takes (VoIP's 5 KiB), a device token of what APNs
    /// issues (hex, at most 200), headers as the accept path writes them.
    public static let maxPayloadBytes = 5_120
    static let maxTokenBytes = 200
    static let maxTextBytes = 4_096
    static let maxMessageBytes = 65_536
    static let maxHeaders = 16

    public var fields: [(name: [UInt8], value: [UInt8])] {
        var fields: [(name: [UInt8], value: [UInt8])] = [
            (Array("v".utf8), Array(Self.version.utf8)),
            (Array("app".utf8), Array(appID.utf8)),
            (Array("env".utf8), Array(environment.rawValue.utf8)),
            (Array("tok".utf8), Array(token.utf8)),
            (Array("dev".utf8), Array(deviceToken.utf8)),
            (Array("hdr".utf8), Array(headers.map { $0.name + ":" + $0.value }.joined(separator: "\n").utf8)),
            (Array("pl".utf8), payload),
            (Array("id".utf8), Array(apnsID.utf8)),
            (Array("at".utf8), Array(String(acceptedAt).utf8)),
            (Array("try".utf8), Array(String(tries).utf8)),
        ]
        if let source {
            fields.append((Array("nid".utf8), Array(source.id.utf8)))
            fields.append((Array("plat".utf8), Array(String(source.platform).utf8)))
            fields.append((Array("msg".utf8), Array(source.message.utf8)))
        }
        return fields
    }

    /// Why an entry was refused: a field's name and what is wrong, never
    /// its value (a token, a payload).
    public struct DecodingError: Error, Equatable, CustomStringConvertible {
        public let field: String
        public let problem: String
        public var description: String { "field \(field): \(problem)" }

        public init(field: String, problem: String) { (self.field, self.problem) = (field, problem) }
    }

    /// Reads an entry's fields. Every field is checked against what the
    /// accept path writes; an unknown field is ignored (a newer writer's).
    public init(fields: [(name: [UInt8], value: [UInt8])]) throws(DecodingError) {
        var byName: [String: [UInt8]] = [:]
        for field in fields where field.name.count <= 8 {
            let name = String(decoding: field.name, as: UTF8.self)
            guard byName[name] == nil else {
                // The name is a writer's bytes: shown only when printable,
                // so a log line stays one line.
                let shown = field.name.allSatisfy { $0 >= 0x21 && $0 < 0x7F } ? name : "(\(field.name.count) bytes)"
                throw DecodingError(field: shown, problem: "repeated")
            }
            byName[name] = field.value
        }
        func required(_ name: String) throws(DecodingError) -> [UInt8] {
            guard let value = byName[name] else { throw DecodingError(field: name, problem: "missing") }
            return value
        }
        func text(_ name: String, max: Int, allowEmpty: Bool = false, oneLine: Bool = true) throws(DecodingError)
            -> String {
            let bytes = try required(name)
            guard bytes.count <= max else { throw DecodingError(field: name, problem: "longer than \(max) bytes") }
            guard allowEmpty || !bytes.isEmpty else { throw DecodingError(field: name, problem: "empty") }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw DecodingError(field: name, problem: "not UTF-8")
            }
            if oneLine, text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                throw DecodingError(field: name, problem: "control characters")
            }
            return text
        }
        func integer(_ name: String, in range: ClosedRange<Int64>) throws(DecodingError) -> Int64 {
            let bytes = try required(name)
            guard bytes.count <= 20, let value = Int64(String(decoding: bytes, as: UTF8.self)), range.contains(value)
            else { throw DecodingError(field: name, problem: "not an integer in \(range)") }
            return value
        }
        guard try required("v") == Array(Self.version.utf8) else {
            throw DecodingError(field: "v", problem: "not version \(Self.version)")
        }
        appID = try text("app", max: 256)
        guard let environment = APNsEnvironment(rawValue: try text("env", max: 16)) else {
            throw DecodingError(field: "env", problem: "neither production nor development")
        }
        self.environment = environment
        token = try text("tok", max: Self.maxTextBytes)
        let device = try required("dev")
        guard !device.isEmpty, device.count <= Self.maxTokenBytes, device.allSatisfy(Self.isHexDigit) else {
            throw DecodingError(field: "dev", problem: "not a device token (hex, at most \(Self.maxTokenBytes))")
        }
        deviceToken = String(decoding: device, as: UTF8.self)
        headers = try Self.headers(try text("hdr", max: Self.maxTextBytes, allowEmpty: true, oneLine: false))
        payload = try required("pl")
        guard payload.count <= Self.maxPayloadBytes else {
            throw DecodingError(field: "pl", problem: "longer than \(Self.maxPayloadBytes) bytes")
        }
        apnsID = try text("id", max: 64, allowEmpty: true)
        acceptedAt = try integer("at", in: 0...Int64(Int32.max) * 1000)
        tries = Int(try integer("try", in: 0...1_000))
        if byName["nid"] != nil || byName["plat"] != nil || byName["msg"] != nil {
            source = FailedPushSource.Notification(id: try text("nid", max: Self.maxTextBytes, allowEmpty: true),
                            platform: Int(try integer("plat", in: 0...1_000)),
                            message: try text("msg", max: Self.maxMessageBytes, allowEmpty: true, oneLine: false))
        } else {
            source = nil
        }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    /// `name:value` lines: names of lowercase letters, digits and `-`
    /// (HTTP/2's lowercase names), values without control characters, no
    /// `apns-topic` (the app's) and no pseudo-header.
    static func headers(_ text: String) throws(DecodingError) -> [HTTPField] {
        guard !text.isEmpty else { return [] }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count <= maxHeaders else { throw DecodingError(field: "hdr", problem: "more than \(maxHeaders)") }
        var fields: [HTTPField] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw DecodingError(field: "hdr", problem: "a line without ':'") }
            let name = String(line[..<colon])
            let value = String(line[line.index(after: colon)...])
            guard !name.isEmpty, name.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") }),
                  name != "apns-topic"
            else { throw DecodingError(field: "hdr", problem: "a header name that is not lowercase letters, digits and -") }
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw DecodingError(field: "hdr", problem: "control characters in a value")
            }
            fields.append(HTTPField(name: name, value: value))
        }
        return fields
    }
}
