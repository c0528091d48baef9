import Testing
@testable import RelayCore

/// A `/push/…` route of the metatext dialect.
func push(_ environment: APNsEnvironment = .production, app: AppReference = .defaultApp,
         token: String = token64, id: String = "42") -> Route {
    .relay(RelayTarget(app: app, environment: environment, deviceToken: token, dialect: .metatext(id: id)))
}

let upperToken = token64.uppercased()

struct PushRouteTests {
    /// Bad tokens, missing ids, extra or empty segments, near misses of
    /// the prefix: each is 404 for POST.
    static let malformedPushTargets: [String] = [
        "/push/\(token64.dropLast())/42",
        "/push/\(token64.dropLast(2))/42",
        "/push/\(String(repeating: "ab", count: 101))/42",
        "/push/\(token64.dropLast())g/42",
        "/push/\(token64)",
        "/push/\(token64)/",
        "/push/\(token64)/?sandbox=true",
        "/push/\(token64)/42/",
        "/push/\(token64)/42/extra",
        "/push/app/\(token64)/42/extra",
        "/push//\(token64)/42",
        "/push/app/\(token64)",
        "/push/app/notatoken/42",
        "/push/",
        "/push",
        "/pushx/\(token64)/42",
        "/PUSH/\(token64)/42",
    ]

    @Test("a malformed /push URL is 404", arguments: malformedPushTargets)
    func malformed(target: String) {
        #expect(route(method: "POST", target: target) == .notFound)
    }

    @Test("the query still never changes a /relay-to route")
    func relayToIgnoresSandbox() {
        #expect(route(method: "POST", target: "/relay-to/production/\(token64)?sandbox=true") == relay(.production))
    }

    @Test("an app reference resolves to the default app by nothing, its id or its topic, and to nothing else",
          arguments: [
              (AppReference.defaultApp, true), (.named("com.example.app"), true), (.named("toot"), true),
              (.named("com.example.other"), false), (.named("COM.EXAMPLE.APP"), false), (.named(""), false),
          ])
    func resolvesApps(reference: AppReference, found: Bool) {
        let app = RelayApp(id: "toot", topic: "com.example.app")
        #expect(RelayApps(defaultApp: app).app(for: reference) == (found ? app : nil))
        // The environment's app has no id: only its topic names it.
        let unnamed = RelayApp(topic: "com.example.app")
        let byName = reference == .named("toot")
        #expect(RelayApps(defaultApp: unnamed).app(for: reference) == (found && !byName ? unnamed : nil))
        #expect(RelayApps(defaultApp: nil).app(for: reference) == nil)
    }
}
