import Foundation

/// A broadcast the emulator accepted, for tests (`receivedBroadcasts()`,
/// `onBroadcast`, the command's `--broadcast-record`).
public struct ReceivedBroadcast: Sendable, Equatable {
    public var bundleID: String
    public var channelID: String
    /// The request's regular fields as received.
    public var headers: [HTTPFieldPair]
    public var payload: [UInt8]
    public var requestID: String
    /// Client certificate UID or provider token `iss`.
    public var authenticatedAs: String?

    public struct HTTPFieldPair: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    /// One line of JSON, keys sorted: `bundle_id`, `channel_id`,
    /// `request_id`, `authenticated_as` (when known), `headers` as
    /// `[[name, value], …]` (`authorization` redacted) and `payload` as text.
    public var jsonLine: String {
        var object: [String: Any] = [
            "bundle_id": bundleID, "channel_id": channelID, "request_id": requestID,
            "headers": headers.map { [$0.name, $0.name == "authorization" ? "<redacted>" : $0.value] },
            "payload": String(decoding: payload, as: UTF8.self),
        ]
        if let authenticatedAs { object["authenticated_as"] = authenticatedAs }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
