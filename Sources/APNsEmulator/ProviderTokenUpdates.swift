import APNsCore
import Locking

/// APNs' limit on new provider tokens, when the emulator enforces it
/// (`APNsEmulatorConfiguration.tokenUpdateInterval`): Apple asks for a new
/// token "no more than once every 20 minutes" and answers
/// 429 TooManyProviderTokenUpdates to one that comes sooner.
///
/// Per key, across every connection and loop thread (APNs counts a key's
/// updates wherever they come from): the tokens taken (by their `iat`) and
/// when the newest of them first came. A token with an `iat` not seen yet is
/// an update: taken when `interval` seconds have passed since the key's last
/// update, else refused and not remembered, so the same token is taken once
/// the interval is over. Tokens taken stay good until they expire (60
/// minutes, `ProviderToken.maximumAge`).
final class ProviderTokenUpdates: Sendable {
    /// Seconds between two updates of one key.
    let interval: Int

    private struct KeyUpdates {
        /// The `iat`s of the tokens taken, within the last hour.
        var taken: Set<Int>
        /// When the newest token was taken (unix seconds).
        var lastUpdate: Int
    }

    private let keys = Locked<[String: KeyUpdates]>([:])

    init(interval: Int) {
        self.interval = interval
    }

    /// Whether APNs takes the token of `keyID` issued at `issuedAt` at unix
    /// time `now`; an update taken is remembered.
    func take(keyID: String, issuedAt: Int, now: Int) -> Bool {
        keys.withLock { keys in
            guard var updates = keys[keyID] else {
                keys[keyID] = KeyUpdates(taken: [issuedAt], lastUpdate: now)
                return true
            }
            if updates.taken.contains(issuedAt) { return true }
            guard now - updates.lastUpdate >= interval else { return false }
            // Expired tokens are refused before they get here: forget them.
            updates.taken = updates.taken.filter { now - $0 <= ProviderToken.maximumAge }
            updates.taken.insert(issuedAt)
            updates.lastUpdate = now
            keys[keyID] = updates
            return true
        }
    }
}
