import AsyncPush
import Fleet
import Observability
import Relay
import RelayCore

extension Daemon {
    /// With REDIS_URL and API_PORT: the fleet's asynchronous queue, which
    /// the accept path writes to (`AsyncPushes.shared`); `start` it once
    /// the API listens.
    func makeFleetAsync(_ configuration: Configuration, fleet: Fleet?, logger: Logger) -> FleetAsyncDelivery? {
        guard let fleet, configuration.apiPort != nil else { return nil }
        return FleetAsyncDelivery(fleet: fleet, maxPending: configuration.apiAsyncMaxPending,
                                  capacity: Self.fleetAsyncCapacity(configuration), logger: logger)
    }

    /// What one instance holds of the fleet's stream at most (tries in
    /// flight and retries waiting): no more than MAX_IN_FLIGHT, and at
    /// most 1,024, so an instance that dies leaves little to claim (each
    /// held entry may be delivered twice) while the reads, 500 entries
    /// each, keep the APNs connections busy.
    static func fleetAsyncCapacity(_ configuration: Configuration) -> Int {
        max(1, min(configuration.maxInFlight, 1_024))
    }

    /// The end of shutdown: acknowledgements answered (at most 2 s), then
    /// the links closed. What this instance held and did not finish stays
    /// pending in Redis: another instance claims it after REDIS_CLAIM_IDLE.
    func closeFleet(_ fleet: Fleet?, async: FleetAsyncDelivery?, logger: Logger) {
        if let stream = async?.queue.stream {
            stream.waitForAcknowledgements(timeout: .seconds(2))
            if stream.held > 0 {
                logger.info("\(stream.held) asynchronous notifications not done stay pending in Redis; another "
                    + "instance claims them after REDIS_CLAIM_IDLE (\(fleet?.claimIdle ?? .zero))")
            }
        }
        fleet?.close()
    }
}
