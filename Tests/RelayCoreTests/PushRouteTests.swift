import APNsCore
@testable import RelayCore
import Testing

/// A `/push/…` route of the metatext dialect.
func push(_ environment: APNsEnvironment = .production, app: AppReference = .defaultApp,
         token: String = token64, id: String = "42", vapid: [UInt8]? = nil) -> Route {
    .relay(RelayTarget(app: app, environment: environment, deviceToken: token, dialect: .metatext(id: id),
                       vapidKeyHash: vapid))
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
              (AppReference.defaultApp, Optional("default")), (.idOrTopic("com.example.app"), "default"),
              (.idOrTopic("default"), "default"), (.id("default"), "default"),
              (.idOrTopic("toot"), "toot"), (.id("toot"), "toot"), (.idOrTopic("com.example.toot"), "toot"),
              (.id("com.example.toot"), nil), (.idOrTopic("com.example.other"), nil),
              (.idOrTopic("COM.EXAMPLE.APP"), nil), (.idOrTopic(""), nil), (.id(""), nil),
          ])
    func resolvesApps(reference: AppReference, expected: String?) {
        let apps = RelayApps([RelayApp(topic: "com.example.app", health: FlagHealth()),
                              RelayApp(id: "toot", topic: "com.example.toot", health: FlagHealth())],
                             defaultAppID: RelayApp.defaultID)
        #expect(apps.app(for: reference)?.id == expected)
        // Without a default app, a URL without an app part leads nowhere;
        // the named apps are still there.
        let noDefault = RelayApps([RelayApp(id: "toot", topic: "com.example.toot", health: FlagHealth())],
                                  defaultAppID: nil)
        #expect(noDefault.app(for: reference)?.id == (expected == "toot" ? "toot" : nil))
    }

    @Test("the relay's health fails only when every app's credentials are rejected")
    func healthOfAllApps() {
        let first = RelayApp(id: "a", topic: "com.example.a", health: FlagHealth())
        let second = RelayApp(id: "b", topic: "com.example.b", health: FlagHealth())
        let apps = RelayApps([first, second], defaultAppID: nil)
        #expect(!apps.allCredentialsRejected)
        first.health.record(.rejected)
        #expect(!apps.allCredentialsRejected)
        second.health.record(.rejected)
        #expect(apps.allCredentialsRejected)
        second.health.record(nil)
        #expect(apps.allCredentialsRejected)
        second.health.record(.accepted)
        #expect(!apps.allCredentialsRejected)
        #expect(!RelayApps(defaultApp: nil).allCredentialsRejected)
    }
}

/// A `CredentialHealth` for one thread (the relay's, Delivery's `AppHealth`,
/// is atomic and out of RelayCore's reach): the verdicts as `AppHealth`
/// records them.
private final class FlagHealth: CredentialHealth, @unchecked Sendable {
    private var rejected = false

    var credentialsRejected: Bool { rejected }

    func record(_ verdict: CredentialVerdict?) {
        if let verdict { rejected = verdict == .rejected }
    }
}
