import APNs
import Fleet
import Glibc
import Observability
import Relay

extension Daemon {
    /// With a fleet: every token credential's provider token shared through
    /// Redis (`ProviderTokenSharing`). At start-up, before any listener, the
    /// fleet's tokens are fetched for at most 2 s, so the first APNs request
    /// already sends the fleet's token; when Redis is slower, each provider
    /// sends its own until Redis answers.
    func shareProviderTokens(_ catalog: APNsCredentialCatalog, fleet: Fleet?, logger: Logger) {
        guard let fleet else { return }
        let sharing = ProviderTokenSharing(link: fleet.commands, providers: { catalog.tokenProviders },
                                           now: { Int(Glibc.time(nil)) }, logger: logger)
        if !sharing.synchronizeAll(waitingAtMost: .seconds(2)) {
            logger.warning("fleet: Redis did not answer within 2 s: provider tokens signed here until it does")
        }
        sharing.start()
    }
}
