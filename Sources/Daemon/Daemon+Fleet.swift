import Fleet
import Observability
import Redis
import Relay
import RelayCore

extension Daemon {
    /// REDIS_URL parsed, before anything else is loaded: a URL that does
    /// not parse stops start-up (and check-config) with one line, which
    /// never shows the password.
    func redisURL(_ configuration: Configuration) throws(StartupFailure) -> RedisURL? {
        guard let text = configuration.redisURL else { return nil }
        do { return try RedisURL(parsing: text) } catch { throw StartupFailure("REDIS_URL: \(error)") }
    }

    /// With REDIS_URL: this instance's name and its links to Redis, which
    /// connect in the background (an unreachable Redis is a log line and a
    /// metric, never a reason not to start: Web Push does not need it).
    func startFleet(_ url: RedisURL?, configuration: Configuration, logger: Logger) throws(StartupFailure) -> Fleet? {
        guard let url else { return nil }
        let instance = InstanceName.make()
        let fleet: Fleet
        do {
            fleet = try Fleet(url: url, instance: instance, claimIdle: configuration.redisClaimIdle, logger: logger)
        } catch {
            throw StartupFailure("cannot start the Redis links: \(error)")
        }
        logger.info("fleet: instance \(instance), Redis \(url), claim after \(configuration.redisClaimIdle) idle")
        return fleet
    }
}
