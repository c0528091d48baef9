import APNsCore
import FCMCore
import HTTPCore
import JSON
import RelayCore

// An asynchronous notification as the fields of a fleet's stream entry,
// and back. An iOS token's entry (format 1, as before FCM):
//
//     v app env tok dev hdr pl id at try [nid plat msg]
//
// An Android token's entry has `svc` `fcm`, its registration token as
// `tok` and FCM's request body as `pl`, and none of APNs' fields:
//
//     v app svc tok pl at try [nid plat msg]
//
// No `svc`: APNs, so an entry an older instance wrote reads as it did. An
// older instance refuses an FCM entry by its missing `env` field (a log
// line, counted failed), never sends it to APNs.

extension AsyncNotification {
    /// The format's version: an entry of another is refused whole, never
    /// half read.
    static let version = "1"
    /// `svc`'s value for an FCM notification.
    static let fcmService = "fcm"

    /// Limits a decoded entry keeps to, whoever wrote it: a payload no
    /// larger than APNs takes (VoIP's 5 KiB), a device token of what APNs
    /// issues (hex, at most 200), headers as the accept path writes them.
    public static let maxPayloadBytes = 5_120
    static let maxTokenBytes = 200
    static let maxTextBytes = 4_096
    static let maxMessageBytes = 65_536
    static let maxHeaders = 16
    /// An FCM request body: FCM takes 4 KiB of data and notification; the
    /// accept path bounds only the data, so the gorush fields around it
    /// (a long title, Android options) are given room, as `msg` is.
    public static let maxFCMBodyBytes = 65_536

    public var fields: [(name: [UInt8], value: [UInt8])] {
        var fields: [(name: [UInt8], value: [UInt8])] = []
        fields.reserveCapacity(13)
        func add(_ name: String, _ value: [UInt8]) { fields.append((Array(name.utf8), value)) }
        add("v", Array(Self.version.utf8))
        add("app", Array(appID.utf8))
        switch message {
        case .apns(let apns):
            add("env", Array(apns.environment.rawValue.utf8))
            add("tok", Array(token.utf8))
            add("dev", Array(apns.deviceToken.utf8))
            add("hdr", Array(apns.headers.map { $0.name + ":" + $0.value }.joined(separator: "\n").utf8))
            add("pl", apns.payload)
            add("id", Array(apns.apnsID.utf8))
        case .fcm(let fcm):
            add("svc", Array(Self.fcmService.utf8))
            add("tok", Array(fcm.token.text.utf8))
            add("pl", fcm.body)
        }
        add("at", Array(String(acceptedAt).utf8))
        add("try", Array(String(tries).utf8))
        if let source {
            add("nid", Array(source.id.utf8))
            add("plat", Array(String(source.platform).utf8))
            add("msg", Array(source.message.utf8))
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
        let reader = try EntryFields(fields)
        guard try reader.required("v") == Array(Self.version.utf8) else {
            throw DecodingError(field: "v", problem: "not version \(Self.version)")
        }
        let appID = try reader.text("app", max: 256)
        let token: String
        let message: Message
        switch try reader.optionalText("svc", max: 16) {
        case nil:
            guard let environment = APNsEnvironment(rawValue: try reader.text("env", max: 16)) else {
                throw DecodingError(field: "env", problem: "neither production nor development")
            }
            token = try reader.text("tok", max: Self.maxTextBytes)
            let device = try reader.required("dev")
            guard !device.isEmpty, device.count <= Self.maxTokenBytes, device.allSatisfy(Self.isHexDigit) else {
                throw DecodingError(field: "dev", problem: "not a device token (hex, at most \(Self.maxTokenBytes))")
            }
            let headers = try Self.headers(try reader.text("hdr", max: Self.maxTextBytes, allowEmpty: true,
                                                           oneLine: false))
            let payload = try reader.required("pl")
            guard payload.count <= Self.maxPayloadBytes else {
                throw DecodingError(field: "pl", problem: "longer than \(Self.maxPayloadBytes) bytes")
            }
            message = .apns(APNsMessage(environment: environment, deviceToken: String(decoding: device, as: UTF8.self),
                                        headers: headers, payload: payload,
                                        apnsID: try reader.text("id", max: 64, allowEmpty: true)))
        case Self.fcmService?:
            guard let fcmToken = FCMToken(try reader.text("tok", max: FCMToken.maxLength)) else {
                throw DecodingError(field: "tok", problem: "not an FCM registration token")
            }
            token = fcmToken.text
            let body = try reader.required("pl")
            try Self.checkFCMBody(body, token: fcmToken)
            message = .fcm(FCMMessage(token: fcmToken, body: body))
        case _?:
            throw DecodingError(field: "svc", problem: "not \(Self.fcmService)")
        }
        let acceptedAt = try reader.integer("at", in: 0...Int64(Int32.max) * 1000)
        let tries = Int(try reader.integer("try", in: 0...1_000))
        let source: FailedPushSource.Notification?
        if reader.has("nid") || reader.has("plat") || reader.has("msg") {
            source = FailedPushSource.Notification(
                id: try reader.text("nid", max: Self.maxTextBytes, allowEmpty: true),
                platform: Int(try reader.integer("plat", in: 0...1_000)),
                message: try reader.text("msg", max: Self.maxMessageBytes, allowEmpty: true, oneLine: false))
        } else {
            source = nil
        }
        self.init(appID: appID, token: token, message: message, source: source, acceptedAt: acceptedAt, tries: tries)
    }

    /// An FCM body as the accept path writes it: at most
    /// `maxFCMBodyBytes`, one JSON object whose `message` is an object for
    /// the entry's token, so an entry cannot send to a token other than
    /// the one its failed-push log and feedback entry would name.
    static func checkFCMBody(_ body: [UInt8], token: FCMToken) throws(DecodingError) {
        guard body.count <= maxFCMBodyBytes else {
            throw DecodingError(field: "pl", problem: "longer than \(maxFCMBodyBytes) bytes")
        }
        let json: JSONValue
        do { json = try parseStrictJSON(body) } catch {
            throw DecodingError(field: "pl", problem: "not JSON")
        }
        guard case .object? = json["message"] else {
            throw DecodingError(field: "pl", problem: "not an FCM request ({\"message\":{…}})")
        }
        guard json["message"]?["token"] == .string(token.text) else {
            throw DecodingError(field: "pl", problem: "a message to another token than tok's")
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

/// An entry's fields by name, each read by its rule.
private struct EntryFields {
    typealias DecodingError = AsyncNotification.DecodingError
    private var byName: [String: [UInt8]] = [:]

    init(_ fields: [(name: [UInt8], value: [UInt8])]) throws(DecodingError) {
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
    }

    func has(_ name: String) -> Bool { byName[name] != nil }

    func required(_ name: String) throws(DecodingError) -> [UInt8] {
        guard let value = byName[name] else { throw DecodingError(field: name, problem: "missing") }
        return value
    }

    func optionalText(_ name: String, max: Int) throws(DecodingError) -> String? {
        has(name) ? try text(name, max: max) : nil
    }

    func text(_ name: String, max: Int, allowEmpty: Bool = false, oneLine: Bool = true) throws(DecodingError) -> String {
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
}
