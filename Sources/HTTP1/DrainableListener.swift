/// A listener whatever its handler type, as a daemon's shutdown sees it:
/// stop accepting, wait for its connections, close the rest, flush its logs.
public protocol DrainableListener: AnyObject, Sendable {
    var counters: HTTP1ListenerCounters { get }
    var isDrained: Bool { get }
    func beginShutdown()
    func closeAllConnections()
    func flushLogs()
}
