import RelayCore
import Testing

@Suite("Provider API routes")
struct APIRoutingTests {
    static let token = String(repeating: "ab", count: 32)

    static let table: [(method: String, target: String, route: APIRoute)] = [
        ("POST", "/api/push", .push),
        ("POST", "/api/push?x=1", .push),
        ("GET", "/api/push", .methodNotAllowed(allow: "POST")),
        ("GET", "/healthz", .health),
        ("HEAD", "/healthz", .health),
        ("POST", "/healthz", .methodNotAllowed(allow: "GET, HEAD")),
        ("POST", "/", .xmlRPC),
        ("POST", "/RPC2", .xmlRPC),
        ("GET", "/RPC2", .methodNotAllowed(allow: "POST")),
        ("POST", "/3/device/\(token)", .device(.production, token: token)),
        ("POST", "/development/3/device/\(token)", .device(.development, token: token)),
        ("POST", "/3/device/not-hex", .device(.production, token: "not-hex")),
        ("GET", "/3/device/\(token)", .methodNotAllowed(allow: "POST")),
        ("POST", "/3/device/", .notFound),
        ("POST", "/3/device/\(token)/more", .notFound),
        ("POST", "/sandbox/3/device/\(token)", .notFound),
        ("GET", "/api/feedback/toot", .feedback(app: "toot")),
        ("GET", "/api/feedback/com.example%2Eapp", .feedback(app: "com.example.app")),
        ("POST", "/api/feedback/toot", .methodNotAllowed(allow: "GET")),
        ("GET", "/api/feedback/", .notFound),
        ("GET", "/api/feedback/a/b", .notFound),
        ("POST", "/relay-to/production/\(token)", .notFound),
        ("POST", "", .notFound),
        ("POST", "*", .notFound),
        ("post", "/api/push", .methodNotAllowed(allow: "POST")),
        // APNs' broadcast API: every method routes, the handler answers a
        // wrong one in APNs' words.
        ("POST", "/4/broadcasts/apps/com.example.app", .broadcast(.production, .broadcast, bundleID: "com.example.app")),
        ("GET", "/4/broadcasts/apps/com.example.app", .broadcast(.production, .broadcast, bundleID: "com.example.app")),
        ("POST", "/development/4/broadcasts/apps/com.example.app",
         .broadcast(.development, .broadcast, bundleID: "com.example.app")),
        ("POST", "/1/apps/com.example.app/channels", .broadcast(.production, .channels, bundleID: "com.example.app")),
        ("DELETE", "/development/1/apps/com.example.app/channels",
         .broadcast(.development, .channels, bundleID: "com.example.app")),
        ("GET", "/1/apps/com.example.app/all-channels?x=1",
         .broadcast(.production, .allChannels, bundleID: "com.example.app")),
        ("POST", "/4/broadcasts/apps/", .notFound),
        ("POST", "/4/broadcasts/apps/a/b", .notFound),
        ("GET", "/1/apps//channels", .notFound),
        ("GET", "/1/apps/a/b/channels", .notFound),
        ("GET", "/1/apps/com.example.app/channel", .notFound),
        ("GET", "/1/apps/com.example.app", .notFound),
    ]

    @Test("each API target goes to its route, and other methods are refused with Allow", arguments: table)
    func routes(_ row: (method: String, target: String, route: APIRoute)) {
        #expect(apiRoute(method: row.method, target: row.target) == row.route)
    }
}
