import APNsCore

extension APNsClient: APNsBroadcastSender {
    /// A broadcast goes over the pool of its credential and environment
    /// that notifications use (the same host); channel management over a
    /// pool of its own, to the channel management host.
    public func send(_ request: APNsBroadcastRequest, completion: @escaping (APNsBroadcastAnswer) -> Void) {
        send(PooledBroadcast(request: request, completion: completion),
             key: PoolKey(credential: request.credential, environment: request.environment, host: request.host))
    }
}
