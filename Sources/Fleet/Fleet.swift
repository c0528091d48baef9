import EventLoop
import Observability
import Redis

/// What this instance shares with the others of its fleet: its name, and
/// its two links to Redis (`REDIS_URL`). Made by the daemon at start-up
/// when `REDIS_URL` is set; without it there is no fleet and every piece
/// of state stays in the process.
public final class Fleet: Sendable {
    /// This instance's consumer name in the streams' group.
    public let instance: String
    /// Short commands: feedback, provisioned apps, provider tokens, stream
    /// writes and acknowledgements.
    public let commands: RedisLink
    /// The stream reads that block (`XREADGROUP … BLOCK`), apart so that
    /// they hold no command up.
    public let reads: RedisLink
    /// `REDIS_CLAIM_IDLE`: an entry idle this long with another consumer
    /// is taken over.
    public let claimIdle: Duration

    /// `logger` gets each link's connects and failures (`RedisLinkLog`).
    public init(url: RedisURL, instance: String, claimIdle: Duration, logger: Logger) throws(EventLoopError) {
        self.instance = instance
        self.claimIdle = claimIdle
        let commandsLog = RedisLinkLog(name: "commands", url: url, logger: logger)
        commands = try RedisLink(url: url, name: "commands") { commandsLog.handle($0) }
        var readSettings = RedisConnectionSettings()
        // A read blocks for up to `readBlock` on the server: its reply may
        // take that long on a healthy link.
        readSettings.commandTimeout = Self.readBlock + .seconds(5)
        do {
            let readsLog = RedisLinkLog(name: "reads", url: url, logger: logger)
            reads = try RedisLink(url: url, name: "reads", settings: readSettings) { readsLog.handle($0) }
        } catch {
            commands.close()
            throw error
        }
    }

    /// How long one stream read waits on the server for new entries.
    public static let readBlock: Duration = .seconds(1)

    public var links: [RedisLink] { [commands, reads] }

    /// Closes both links (shutdown, after what uses them is done).
    public func close() {
        commands.close()
        reads.close()
    }
}
