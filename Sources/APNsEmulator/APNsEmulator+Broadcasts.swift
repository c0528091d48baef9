// What the emulator's broadcast API received, for tests.
extension APNsEmulator {
    /// The accepted broadcasts so far (only with `recordNotifications`).
    public func receivedBroadcasts() -> [ReceivedBroadcast] {
        state.broadcasts.withLock { $0 }
    }

    /// Called with each accepted broadcast, on a loop thread.
    public var onBroadcast: (@Sendable (ReceivedBroadcast) -> Void)? {
        get { state.broadcastObserver.withLock { $0.call } }
        set { state.broadcastObserver.withLock { $0.call = newValue } }
    }

    /// The channel ids of `bundleID` now.
    public func channelIDs(bundleID: String) -> [String] {
        state.channels.ids(bundleID: bundleID)
    }
}
