// The paths of APNs' broadcast API (Apple, "Sending broadcast push
// notification requests to APNs", "Sending channel management requests to
// APNs"): the relay's API routes them, the emulator serves them.

/// Which call of APNs' broadcast API a path is (its method aside).
public enum APNsBroadcastCall: Sendable, Equatable {
    /// `/4/broadcasts/apps/<bundle id>`: a broadcast (POST).
    case broadcast
    /// `/1/apps/<bundle id>/channels`: create (POST), read (GET), delete (DELETE).
    case channels
    /// `/1/apps/<bundle id>/all-channels`: every channel id (GET).
    case allChannels

    /// The methods APNs takes for the call.
    public var methods: [String] {
        switch self {
        case .broadcast: ["POST"]
        case .channels: ["POST", "GET", "DELETE"]
        case .allChannels: ["GET"]
        }
    }

    /// The call and bundle id of an APNs path, nil for another path.
    public static func route(_ path: Substring) -> (APNsBroadcastCall, String)? {
        func bundleID(_ text: Substring) -> String? {
            guard !text.isEmpty, !text.utf8.contains(UInt8(ascii: "/")) else { return nil }
            return String(text)
        }
        if path.hasPrefix("/4/broadcasts/apps/") {
            return bundleID(path.dropFirst("/4/broadcasts/apps/".utf8.count)).map { (.broadcast, $0) }
        }
        guard path.hasPrefix("/1/apps/") else { return nil }
        let rest = path.dropFirst("/1/apps/".utf8.count)
        for (suffix, call) in [("/channels", APNsBroadcastCall.channels), ("/all-channels", .allChannels)]
            where rest.hasSuffix(suffix) {
            return bundleID(rest.dropLast(suffix.utf8.count)).map { (call, $0) }
        }
        return nil
    }
}
