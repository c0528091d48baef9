import Testing
@testable import RelayCore

/// A `/push/…` route of the metatext dialect.
private func push(_ environment: APNsEnvironment = .production, app: AppReference = .defaultApp,
                  token: String = token64, id: String = "42") -> Route {
    .relay(RelayTarget(app: app, environment: environment, deviceToken: token, dialect: .metatext(id: id)))
}

private let upperToken = token64.uppercased()

struct PushRouteTests {
    static let routes: [RouteCase] = [
        // metatext-apns: /push/<token>/<id>, production unless sandbox=true.
        RouteCase(method: "POST", target: "/push/\(token64)/42", expected: push()),
        RouteCase(method: "POST", target: "/push/\(upperToken)/42", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=true", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?a=1&sandbox=true&b", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=%74rue", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=true#frag", expected: push(.development)),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=false", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=TRUE", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandbox=true&sandbox=false", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42?sandboxes=true", expected: push()),
        RouteCase(method: "POST", target: "/push/\(token64)/42#sandbox=true", expected: push()),
        RouteCase(method: "POST", target: "http://relay.example/push/\(token64)/42?sandbox=true",
                  expected: push(.development)),
        // The id is one segment, percent-decoded.
        RouteCase(method: "POST", target: "/push/\(token64)/acct%2F42%20x", expected: push(id: "acct/42 x")),
        RouteCase(method: "POST", target: "/push/\(token64)/100%", expected: push(id: "100%")),
        RouteCase(method: "POST", target: "/push/\(token64)/%FF", expected: push(id: "\u{FFFD}")),
        // Mona: /push/<app-or-topic>/<token>/<id>.
        RouteCase(method: "POST", target: "/push/com.example.mona/\(token64)/7",
                  expected: push(app: .named("com.example.mona"), id: "7")),
        RouteCase(method: "POST", target: "/push/toot/\(token64)/7?sandbox=true",
                  expected: push(.development, app: .named("toot"), id: "7")),
        RouteCase(method: "POST", target: "/push/com%2Eexample/\(token64)/7",
                  expected: push(app: .named("com.example"), id: "7")),
        // Bad tokens, missing ids, extra or empty segments: 404.
        RouteCase(method: "POST", target: "/push/\(token64.dropLast())/42", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64.dropLast(2))/42", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(String(repeating: "ab", count: 101))/42", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64.dropLast())g/42", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64)", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64)/", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64)/?sandbox=true", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64)/42/", expected: .notFound),
        RouteCase(method: "POST", target: "/push/\(token64)/42/extra", expected: .notFound),
        RouteCase(method: "POST", target: "/push/app/\(token64)/42/extra", expected: .notFound),
        RouteCase(method: "POST", target: "/push//\(token64)/42", expected: .notFound),
        RouteCase(method: "POST", target: "/push/app/\(token64)", expected: .notFound),
        RouteCase(method: "POST", target: "/push/app/notatoken/42", expected: .notFound),
        RouteCase(method: "POST", target: "/push/", expected: .notFound),
        RouteCase(method: "POST", target: "/push", expected: .notFound),
        RouteCase(method: "POST", target: "/pushx/\(token64)/42", expected: .notFound),
        RouteCase(method: "POST", target: "/PUSH/\(token64)/42", expected: .notFound),
        // Another method on /push/…: 405 Allow: POST, valid path or not.
        RouteCase(method: "GET", target: "/push/\(token64)/42", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "PUT", target: "/push/app/\(token64)/42", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "HEAD", target: "/push/", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "post", target: "/push/\(token64)/42", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "GET", target: "/push", expected: .notFound),
    ]

    @Test("routes the metatext dialect's /push URLs", arguments: routes)
    func routing(_ testCase: RouteCase) {
        #expect(route(method: testCase.method, target: testCase.target) == testCase.expected)
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
