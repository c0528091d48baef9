import EventLoop
import FCM
import FCMCore
import Fleet
import Observability
import RelayCore
import TLS

extension Daemon {
    /// Each loop's FCM client, and the process's access tokens: one
    /// `FCMAccessTokens` on the first loop, fetching through that loop's
    /// client, each client reading them through its loop's view. With a
    /// fleet, the fleet's token is taken instead of fetching
    /// (`AccessTokenSharing`). One TLS context for every loop, trusting
    /// CA_FILENAME (or the system's roots), as APNs' token credentials
    /// share one.
    func makeFCMClients(_ configuration: Configuration, loops: [EventLoop], fleet: Fleet?, logger: Logger)
        throws(StartupFailure) -> (clients: PerLoop<FCMClient>, accessTokens: FCMAccessTokens) {
        let context: TLSContext
        do { context = try TLSContext.client(trustedRootsFile: configuration.caFile, identity: nil, alpn: ["h2"]) } catch {
            throw StartupFailure("CA_FILENAME: \(error)")
        }
        let settings = FCMSettings(configuration: configuration)
        let clients = PerLoop(loops: loops) { FCMClient(loop: $0, settings: settings, tlsContext: context) }
        let fetching = clients.value(on: loops[0])
        let sharing = fleet.map { AccessTokenSharing(link: $0.commands, instance: $0.instance, logger: logger) }
        // The clients keep the tokens (through their views), which fetch through the first: unowned.
        let accessTokens = FCMAccessTokens(loop: loops[0], fetch: { [unowned fetching] in fetching.fetchToken($0, $1, $2) },
                                           log: { logger.info($0) }, servedLoops: loops, sharing: sharing)
        let transfer = UnsafeTransfer(accessTokens)
        clients.forEach { $0.accessTokens = transfer.value.view(on: $0.loop) }
        return (clients, accessTokens)
    }

    /// After a reload: the accounts no app names any more are dropped.
    func keepFCMAccounts(of apps: RelayApps, in accessTokens: FCMAccessTokens) {
        let accounts = apps.all.compactMap { $0.fcm?.account }
        let transfer = UnsafeTransfer(accessTokens)
        accessTokens.loop.execute { transfer.value.keepOnly(accounts) }
    }
}
