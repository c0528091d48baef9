import APNsCore
import Locking

/// The broadcast channels the emulator has made, per bundle id, in memory
/// (one environment per emulator, as APNs keeps each environment's apart).
/// Thread-safe: every loop thread's connections share it.
final class BroadcastChannels: Sendable {
    /// Channel id → the channel's settings, per bundle id.
    private let channels = Locked<[String: [String: APNsChannelSettings]]>([:])

    /// A new channel, or nil when the app has `APNsChannelID.maximumChannelsPerApp`.
    func create(bundleID: String, settings: APNsChannelSettings, id: String) -> String? {
        channels.withLock { channels in
            guard channels[bundleID, default: [:]].count < APNsChannelID.maximumChannelsPerApp else { return nil }
            channels[bundleID, default: [:]][id] = settings
            return id
        }
    }

    func settings(bundleID: String, id: String) -> APNsChannelSettings? {
        channels.withLock { $0[bundleID]?[id] }
    }

    /// Whether the channel was there.
    func delete(bundleID: String, id: String) -> Bool {
        channels.withLock { $0[bundleID]?.removeValue(forKey: id) != nil }
    }

    /// The app's channel ids, sorted (a stable answer for tests).
    func ids(bundleID: String) -> [String] {
        channels.withLock { ($0[bundleID]?.keys).map { $0.sorted() } ?? [] }
    }

    func removeAll() {
        channels.withLock { $0.removeAll() }
    }
}
