import APNsCore

// The provider API's routes (WIRE.md §4.1), on the API listener only (never
// the Web Push port): gorush's `/api/push` and `/healthz`, Apple's own
// `/3/device/<token>`, pyapns' XML-RPC endpoint and the feedback list.

/// Where one request to the API listener goes.
public enum APIRoute: Sendable, Equatable {
    /// `POST /api/push`: gorush's push request.
    case push
    /// `GET|HEAD /healthz`: gorush's health check (200, empty).
    case health
    /// `POST /3/device/<token>` (production) and
    /// `POST /development/3/device/<token>`: Apple's request, proxied. The
    /// prefix stands for Apple's sandbox host, which a client of Apple's API
    /// changes to reach the other environment; the token is as sent (the
    /// proxy's decoder checks it, so the refusal is APNs-shaped).
    case device(APNsEnvironment, token: String)
    /// `POST /` or `POST /RPC2`: pyapns' XML-RPC (Twisted serves it at the
    /// resource's root; `/RPC2` is xmlrpc.client's and many servers' path).
    case xmlRPC
    /// `GET /api/feedback/<app>`: the app's feedback list, percent-decoded.
    case feedback(app: String)
    /// APNs' broadcast API: `POST /4/broadcasts/apps/<bundle id>` and
    /// channel management under `/1/apps/<bundle id>/`, in the environment
    /// the path names (`apiEnvironment`). The method is checked by the
    /// handler, which answers in APNs' words.
    case broadcast(APNsEnvironment, APNsBroadcastCall, bundleID: String)
    case methodNotAllowed(allow: String)
    case notFound
}

/// The route of `method` and `target` on the API listener. The query is
/// ignored (no route takes one).
public func apiRoute(method: String, target: String) -> APIRoute {
    var path = Substring(target)
    if let query = path.utf8.firstIndex(of: UInt8(ascii: "?")) { path = path[..<query] }
    func only(_ allowed: String, _ route: APIRoute) -> APIRoute {
        allowed.split(separator: ",").contains { $0.trimmingPrefix(" ") == method } ? route
            : .methodNotAllowed(allow: allowed)
    }
    switch path {
    case "/api/push": return only("POST", .push)
    case "/healthz": return only("GET, HEAD", .health)
    case "/", "/RPC2": return only("POST", .xmlRPC)
    default: break
    }
    let (environment, apnsPath) = apiEnvironment(of: path)
    if apnsPath.hasPrefix("/3/device/") {
        let token = apnsPath.dropFirst("/3/device/".utf8.count)
        guard !token.isEmpty, !token.utf8.contains(UInt8(ascii: "/")) else { return .notFound }
        return only("POST", .device(environment, token: String(token)))
    }
    if let (call, bundleID) = APNsBroadcastCall.route(apnsPath) {
        return .broadcast(environment, call, bundleID: bundleID)
    }
    if path.hasPrefix("/api/feedback/") {
        let app = path.dropFirst("/api/feedback/".utf8.count)
        guard !app.isEmpty, !app.utf8.contains(UInt8(ascii: "/")) else { return .notFound }
        return only("GET", .feedback(app: String(decoding: percentDecoded(app.utf8), as: UTF8.self)))
    }
    return .notFound
}

/// The APNs environment a provider API path names, and the path APNs
/// knows: `/development/…` stands for Apple's sandbox host (a client of
/// Apple's API changes the host to reach it), anything else is production.
public func apiEnvironment(of path: Substring) -> (APNsEnvironment, Substring) {
    let prefix = "/development/"
    guard path.hasPrefix(prefix) else { return (.production, path) }
    return (.development, path.dropFirst(prefix.utf8.count - 1))
}
