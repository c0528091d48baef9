import Dispatch
import EventLoop
import Glibc
import HTTP2
import Locking
import Synchronization
import TLS

/// Shared by the loop threads: configuration, counters, behaviour, records.
final class EmulatorState: Sendable {
    let configuration: APNsEmulatorConfiguration
    let tlsContext: TLSContext
    /// Token authentication's keys (empty without it).
    let providerKeys: [LoadedProviderKey]
    /// Each key's token updates, when their interval is enforced.
    let tokenUpdates: ProviderTokenUpdates?
    /// The FCM side, when the emulator plays FCM too.
    let fcm: FCMEmulatorState?

    let received = Atomic<Int>(0)
    let accepted = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let unanswered = Atomic<Int>(0)
    let resetStreams = Atomic<Int>(0)
    let droppedConnections = Atomic<Int>(0)
    let duplicates = Atomic<Int>(0)
    let connections = Atomic<Int>(0)
    let openConnections = Atomic<Int>(0)
    let handshakeFailures = Atomic<Int>(0)

    /// The behaviour and a version the loops compare against their cached
    /// copy, so the hot path reads one atomic instead of taking a lock.
    let behavior: Locked<APNsEmulatorBehavior>
    let behaviorVersion = Atomic<UInt64>(0)
    /// Requests left for a counted forced action.
    let forcedRemaining = Atomic<Int>(0)

    /// apns-ids answered 200 (client-chosen ones only: generated ids are unique).
    let ledger = Locked<Set<UUIDKey>>([])
    let records = Locked<[ReceivedNotification]>([])
    /// In a struct: a function type as `Locked`'s generic value is
    /// reabstracted on every `withLock` (its inout writes back a thunk
    /// around the thunk), so each notification deepened the call by two
    /// frames until the stack overflowed (SIGSEGV after about 18,600
    /// notifications with `--record`).
    let observer = Locked(Observer())

    struct Observer {
        var call: (@Sendable (ReceivedNotification) -> Void)?
    }
    let hasObserver = Atomic<Bool>(false)
    /// Broadcast channels, the broadcasts accepted (with `recordNotifications`)
    /// and who hears of each (`onBroadcast`).
    let channels = BroadcastChannels()
    let broadcasts = Locked<[ReceivedBroadcast]>([])
    let broadcastObserver = Locked(BroadcastObserver())

    struct BroadcastObserver {
        var call: (@Sendable (ReceivedBroadcast) -> Void)?
    }

    init(configuration: APNsEmulatorConfiguration) throws(APNsEmulatorError) {
        self.configuration = configuration
        guard configuration.threads >= 1 else { throw .invalidConfiguration("threads must be at least 1") }
        guard configuration.tokenUpdateInterval >= 0 else {
            throw .invalidConfiguration("the token update interval must not be negative")
        }
        let identity: TLSIdentity
        do {
            identity = try TLSIdentity.pem(certificateFile: configuration.certificateFile,
                                           privateKeyFile: configuration.privateKeyFile)
        } catch { throw .credentials(error) }
        var clientCAFile: String?
        var keys: [LoadedProviderKey] = []
        switch configuration.authentication {
        case .clientCertificate(let caFile): clientCAFile = caFile
        case .providerKeys(let configured): keys = try LoadedProviderKey.load(configured)
        case .clientCertificateOrProviderKeys(let caFile, let configured):
            clientCAFile = caFile
            keys = try LoadedProviderKey.load(configured)
        case .none: break
        }
        fcm = try configuration.fcm.map { configuration throws(APNsEmulatorError) in
            try FCMEmulatorState(configuration: configuration)
        }
        do {
            // FCM's clients authenticate by access token, without a certificate.
            tlsContext = try TLSContext.server(identity: identity, alpn: ["h2"], clientCAFile: clientCAFile,
                                               requireClientCertificate: keys.isEmpty && configuration.fcm == nil)
        } catch { throw .tls(error) }
        providerKeys = keys
        tokenUpdates = configuration.tokenUpdateInterval > 0 && !keys.isEmpty
            ? ProviderTokenUpdates(interval: configuration.tokenUpdateInterval) : nil
        behavior = Locked(configuration.behavior)
        forcedRemaining.store(configuration.behavior.forcedCount ?? 0, ordering: .relaxed)
    }

    /// Claims one use of a counted forced action; always true when uncounted.
    func claimForced(_ behavior: APNsEmulatorBehavior) -> Bool {
        guard behavior.forcedCount != nil else { return true }
        var current = forcedRemaining.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = forcedRemaining.compareExchange(
                expected: current, desired: current - 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func log(_ message: String) {
        guard configuration.log else { return }
        var line = Array("apns-emulator: \(message)\n".utf8)
        _ = line.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
