import JSON

/// One FCM message the emulator accepted (answered 200).
public struct FCMReceivedMessage: Sendable {
    /// The target: exactly one of the three is set.
    public var token: String?
    public var topic: String?
    public var condition: String?
    /// The `message` object, as sent.
    public var message: JSONValue
    /// The project of the send path.
    public var projectID: String
    /// The `name` answered: `projects/<project>/messages/<id>`.
    public var name: String
    /// The account whose access token came with it (`client_email`, `private_key_id`).
    public var clientEmail: String
    public var privateKeyID: String
    /// Which access token it came with, as the first 16 hex digits of the
    /// `authorization` value's SHA-256: a test counts the distinct tokens
    /// used (one fetch at a time, kept until expiry) without the token
    /// reaching a record.
    public var accessTokenFingerprint: String
    /// Every regular header field of the request, in arrival order.
    public var headers: [(name: String, value: String)]
    /// Which connection (numbered from 1 in accept order) and stream carried it.
    public var connectionID: Int
    public var streamID: Int32

    /// The `data` of the message, when every value is a string.
    public var data: [String: String] {
        guard case .object(let members)? = message["data"] else { return [:] }
        var data: [String: String] = [:]
        for member in members { if case .string(let text) = member.value { data[member.name] = text } }
        return data
    }

    /// One line of JSON (no trailing newline) for `--fcm-record`: `token`,
    /// `topic`, `condition` (the one set), `project`, `name`, `account`,
    /// `key_id`, `access_token_fingerprint`, `message` (the object as sent), `headers` as
    /// `[[name, value], …]`, `connection` and `stream`. The `authorization`
    /// value (an access token) is replaced by `<redacted>`: these lines end
    /// up in logs.
    public var jsonLine: String {
        var members: [(String, JSONValue)] = []
        if let token { members.append(("token", .string(token))) }
        if let topic { members.append(("topic", .string(topic))) }
        if let condition { members.append(("condition", .string(condition))) }
        members += [
            ("project", .string(projectID)), ("name", .string(name)), ("account", .string(clientEmail)),
            ("key_id", .string(privateKeyID)), ("access_token_fingerprint", .string(accessTokenFingerprint)),
            ("message", message),
            ("headers", .array(headers.map { header in
                .array([.string(header.name), .string(header.name == "authorization" ? "<redacted>" : header.value)])
            })),
            ("connection", .number(String(connectionID))), ("stream", .number(String(streamID))),
        ]
        var line: [UInt8] = []
        appendJSONObject(members, to: &line)
        return String(decoding: line, as: UTF8.self)
    }
}
