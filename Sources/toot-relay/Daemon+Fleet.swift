import Fleet
import Redis
import Relay
import RelayCore

extension Daemon {
    /// With REDIS_URL: this instance's name and its links to Redis, which
    /// connect in the background (an unreachable Redis is a log line and a
    /// metric, never a reason not to start: Web Push does not need it).
    /// A URL that does not parse stops start-up.
    func startFleet(_ configuration: Configuration, logger: Logger) throws(StartupFailure) -> Fleet? {
        guard let text = configuration.redisURL else { return nil }
        let url: RedisURL
        do { url = try RedisURL(parsing: text) } catch { throw StartupFailure("REDIS_URL: \(error)") }
        let instance = InstanceName.make()
        let logs = ["commands", "reads"].map { name in
            (name, RedisLinkLog(name: name, url: url) { warning, line in
                if warning { logger.warning(line) } else { logger.info(line) }
            })
        }
        let byName = Dictionary(uniqueKeysWithValues: logs)
        let fleet: Fleet
        do {
            fleet = try Fleet(url: url, instance: instance, claimIdle: configuration.redisClaimIdle) { link, event in
                byName[link]?.handle(event)
            }
        } catch {
            throw StartupFailure("cannot start the Redis links: \(error)")
        }
        logger.info("fleet: instance \(instance), Redis \(url), claim after \(configuration.redisClaimIdle) idle")
        return fleet
    }
}
