// One call to APNs' broadcast API, as the relay forwards it: the request,
// APNs' answer passed back as it came, and the sender that carries both.

import HTTPCore

/// Which of APNs' hosts a broadcast API call goes to: broadcasts go to the
/// notification host (`api.push.apple.com`), channel management to its own
/// (`api-manage-broadcast.push.apple.com:2196`, sandbox `:2195`).
public enum APNsBroadcastHost: Sendable, Hashable {
    case notifications
    case channelManagement
}

/// A broadcast (`POST /4/broadcasts/apps/<bundle id>`) or a channel
/// management call (`/1/apps/<bundle id>/channels`, `/all-channels`),
/// checked, with the app's credential.
public struct APNsBroadcastRequest: Sendable, Equatable {
    public var host: APNsBroadcastHost
    public var environment: APNsEnvironment
    public var credential: CredentialID
    public var method: String
    public var path: String
    /// The caller's apns-* fields passed on, lowercase (never its
    /// `authorization`: the relay's credential goes instead).
    public var headers: [HTTPField]
    public var body: [UInt8]

    public init(host: APNsBroadcastHost, environment: APNsEnvironment, credential: CredentialID, method: String,
                path: String, headers: [HTTPField], body: [UInt8]) {
        self.host = host
        self.environment = environment
        self.credential = credential
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// APNs' answer to a broadcast API call, or why there is none.
public enum APNsBroadcastAnswer: Sendable, Equatable {
    /// The status, the fields `passedBackFields` names (as APNs sent them)
    /// and the body.
    case answered(status: Int, headers: [HTTPField], body: [UInt8])
    /// No answer: timeout, connection or TLS failure, overload (never `.apns`).
    case failed(DeliveryOutcome)

    /// The answer's fields a caller gets back.
    public static let passedBackFields: Set<String> = [
        "apns-request-id", "apns-channel-id", "apns-id", "apns-unique-id", "retry-after",
    ]
}

/// Sends broadcast API calls: the APNs client of a loop. `completion` runs
/// once, on the loop, never inside `send`.
public protocol APNsBroadcastSender: AnyObject {
    func send(_ request: APNsBroadcastRequest, completion: @escaping (APNsBroadcastAnswer) -> Void)
}
