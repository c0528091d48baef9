import EventLoop
import FCM
import FCMCore
import Observability
import RelayCore
import TLS

extension Daemon {
    /// Each loop's FCM client, with the access tokens of the service
    /// accounts it sends for, fetched through the client's own pools to
    /// each account's token endpoint. One TLS context for every loop,
    /// trusting CA_FILENAME (or the system's roots), as APNs' token
    /// credentials share one.
    func makeFCMClients(_ configuration: Configuration, loops: [EventLoop],
                               logger: Logger) throws(StartupFailure) -> PerLoop<FCMClient> {
        let context: TLSContext
        do { context = try TLSContext.client(trustedRootsFile: configuration.caFile, identity: nil, alpn: ["h2"]) } catch {
            throw StartupFailure("CA_FILENAME: \(error)")
        }
        let settings = FCMSettings(configuration: configuration)
        return PerLoop(loops: loops) { loop in
            let client = FCMClient(loop: loop, settings: settings, tlsContext: context)
            // The client keeps the tokens, which fetch through it: unowned.
            client.accessTokens = FCMAccessTokens(loop: loop, fetch: { [unowned client] in client.fetchToken($0, $1, $2) },
                                                  log: { logger.info($0) })
            return client
        }
    }
}
