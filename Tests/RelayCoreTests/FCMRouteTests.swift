import FCMCore
@testable import RelayCore
import Testing

/// An FCM registration token of the shape FCM's SDKs hand out.
let fcmToken = "cXyzAbc_-123:APA91b" + String(repeating: "Qx9-_z", count: 24)

func fcmRelay(_ token: String? = fcmToken, _ extra: String? = nil, app: AppReference = .defaultApp,
              vapid: [UInt8]? = nil) -> Route {
    .relayFCM(FCMRelayTarget(app: app, token: token.flatMap { FCMToken($0) }, extra: extra, vapidKeyHash: vapid))
}

@Suite("Routing: the FCM URLs")
struct FCMRouteTests {
    static let routes: [RouteCase] = [
        // The default app: /relay-to/fcm/<token>[/extra].
        RouteCase(method: "POST", target: "/relay-to/fcm/\(fcmToken)", expected: fcmRelay()),
        RouteCase(method: "POST", target: "/relay-to/fcm/\(fcmToken)/", expected: fcmRelay()),
        RouteCase(method: "POST", target: "/relay-to/fcm/\(fcmToken)/acct%2F42/x", expected: fcmRelay(fcmToken, "acct/42/x")),
        RouteCase(method: "POST", target: "/relay-to/fcm/\(fcmToken)/%FF", expected: fcmRelay(fcmToken, "\u{FFFD}")),
        RouteCase(method: "POST", target: "http://relay.example/relay-to/fcm/\(fcmToken)?x=1#f", expected: fcmRelay()),
        // An app: /relay-to/<app>/fcm/<token>[/extra].
        RouteCase(method: "POST", target: "/relay-to/toot/fcm/\(fcmToken)", expected: fcmRelay(app: .id("toot"))),
        RouteCase(method: "POST", target: "/relay-to/to%6Ft/fcm/\(fcmToken)/e",
                  expected: fcmRelay(fcmToken, "e", app: .id("toot"))),
        // The shortest and the longest token FCMToken takes; the APNs hex
        // token is an FCM token's syntax too.
        RouteCase(method: "POST", target: "/relay-to/fcm/a", expected: fcmRelay("a")),
        RouteCase(method: "POST", target: "/relay-to/fcm/" + String(repeating: "x", count: 4096),
                  expected: fcmRelay(String(repeating: "x", count: 4096))),
        RouteCase(method: "POST", target: "/relay-to/fcm/\(token64)", expected: fcmRelay(token64)),
        // Not FCM's syntax: routed, the token nil (the handler's 400 before FCM is asked).
        RouteCase(method: "POST", target: "/relay-to/fcm/" + String(repeating: "x", count: 4097), expected: fcmRelay(nil)),
        RouteCase(method: "POST", target: "/relay-to/fcm/abc%3Adef", expected: fcmRelay(nil)),
        RouteCase(method: "POST", target: "/relay-to/fcm/a.b", expected: fcmRelay(nil)),
        RouteCase(method: "POST", target: "/relay-to/fcm/a+b", expected: fcmRelay(nil)),
        RouteCase(method: "POST", target: "/relay-to/fcm/\u{00E9}t\u{00E9}", expected: fcmRelay(nil)),
        RouteCase(method: "POST", target: "/relay-to/toot/fcm/%00", expected: fcmRelay(nil, app: .id("toot"))),
        // No token at all: 404, as on the APNs route.
        RouteCase(method: "POST", target: "/relay-to/fcm/", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/fcm", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/toot/fcm/", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/toot/fcm", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/fcm//x", expected: .notFound),
        // The segment is `fcm` exactly.
        RouteCase(method: "POST", target: "/relay-to/FCM/\(fcmToken)", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/%66cm/\(fcmToken)", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/toot/fcmx/\(fcmToken)", expected: .notFound),
        // `fcm` as an app part is FCM, never an app of that id.
        RouteCase(method: "POST", target: "/relay-to/fcm/production/\(token64)", expected: fcmRelay("production", "\(token64)")),
        // Another method: 405 Allow: POST.
        RouteCase(method: "GET", target: "/relay-to/fcm/\(fcmToken)", expected: .methodNotAllowed(allow: "POST")),
        RouteCase(method: "PUT", target: "/relay-to/toot/fcm/x", expected: .methodNotAllowed(allow: "POST")),
        // Restricted endpoints work as on the APNs routes.
        RouteCase(method: "POST", target: "/relay-to/fcm/\(fcmToken)?vapid=\(keyHash43)", expected: fcmRelay(vapid: keyHash32)),
        RouteCase(method: "POST", target: "/relay-to/toot/fcm/\(fcmToken)/x?a=1&vapid=\(keyHash43)#f",
                  expected: fcmRelay(fcmToken, "x", app: .id("toot"), vapid: keyHash32)),
        RouteCase(method: "POST", target: "/relay-to/fcm/\(fcmToken)?vapid=junk", expected: .notFound),
        RouteCase(method: "POST", target: "/relay-to/fcm/\(fcmToken)?vapid=\(keyHash43.dropLast())", expected: .notFound),
    ]

    @Test("routes FCM requests", arguments: routes)
    func routing(_ testCase: RouteCase) {
        #expect(route(method: testCase.method, target: testCase.target) == testCase.expected)
    }

    @Test("the APNs routes are unchanged by the FCM segment", arguments: [
        RouteCase(method: "POST", target: "/relay-to/production/\(token64)", expected: relay(.production)),
        RouteCase(method: "POST", target: "/relay-to/fcmapp/production/\(token64)",
                  expected: relay(.production, app: .id("fcmapp"))),
        RouteCase(method: "POST", target: "/relay-to/toot/development/\(token64)/fcm",
                  expected: relay(.development, token64, "fcm", app: .id("toot"))),
    ])
    func apnsUnchanged(_ testCase: RouteCase) {
        #expect(route(method: testCase.method, target: testCase.target) == testCase.expected)
    }

    @Test("hostile targets route without trapping")
    func hostileTargets() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("fcm/%:_-aZ09?&=#\u{0}\u{FF}".utf8)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<64, using: &generator)
            let tail = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            let target = "/relay-to/" + String(decoding: tail, as: UTF8.self)
            if case .relayFCM(let routed) = route(method: "POST", target: target), let token = routed.token {
                #expect(FCMToken.isValid(token.text.utf8))
            }
        }
    }
}
