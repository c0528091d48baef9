// swift-tools-version:6.0
import PackageDescription

// toot-relay: a Web Push (RFC 8030) to APNs relay.
// C libraries enter only through the system-library targets; each is
// imported by exactly one Swift module (TLS for OpenSSL, HTTP2 for nghttp2,
// XMLRPC for libxml2, FeedbackHook for libcurl, Redis for hiredis, EventLoop
// for the Linux headers; ARCHITECTURE.md §3), and by that module's tests
// where they need it.
//
// The pure cores (Base64URL, JSON, HTTPCore, APNsCore, FCMCore, RelayCore,
// ProviderAPI) do
// no I/O: protocol code returns values and actions, and the layers above
// them do the reading, writing, clocks and threads. The compiler holds them
// to it: compiled as if Glibc were a module that does not exist, a core
// fails to build on `import Glibc` ("no such module") and on importing
// Foundation, Synchronization or any module that imports Glibc, even
// `internal import` ("missing required module 'Glibc'"). scripts/test checks
// that it still bites. VAPID and PyAPNs do no I/O either, but stand on
// modules that import Glibc (Foundation's JSON decoder; XMLRPC's libxml2 and
// Foundation), so the alias cannot hold them.
let pureCore: [SwiftSetting] = [.unsafeFlags(["-module-alias", "Glibc=NoIOInAPureCore"])]

let package = Package(
    name: "toot-relay",
    products: [
        .executable(name: "toot-relay", targets: ["toot-relay"]),
        .executable(name: "apns-emulator", targets: ["apns-emulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Prometheus exposition (brings swift-metrics and swift-atomics).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // TOML for the apps file (a real TOML library, not a hand-written
        // parser): TOMLKit wraps toml++ (C++, TOML 1.0), and only the
        // AppsFile module imports it.
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ],
    // Each module's tests are the test target of its name plus `Tests`; a
    // comment on a test target says what else it reaches.
    targets: [
        // nghttp2 (HTTP/2 framing, HPACK), imported by HTTP2 only.
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        // OpenSSL 3 (TLS, X.509, PKCS#12, ECDSA, SHA-256), imported by TLS only.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // The relay's protocol, pure Swift, no I/O: routing, Web Push
        // parsing, the APNs request and the FCM message a Web Push message
        // becomes (payload, z85), status mapping, configuration.
        .target(name: "RelayCore", dependencies: ["HTTPCore", "Base64URL", "APNsCore", "JSON", "FCMCore"], swiftSettings: pureCore),
        // Base64 (RFC 4648) decoding and base64url encoding: Web Push keys,
        // VAPID and APNs' JWTs, P12_BASE64.
        .target(name: "Base64URL", swiftSettings: pureCore),
        .testTarget(name: "Base64URLTests", dependencies: ["Base64URL", "TestSupport"]),
        // JSON (RFC 8259): the strict parser and its values, and the one
        // string escaping every JSON the relay writes goes through. A pure core.
        .target(name: "JSON", swiftSettings: pureCore),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        // Firebase Cloud Messaging's words, no I/O: the service account's
        // file, the access token's request (RFC 7523, the signature injected)
        // and answer, the send's answer and what it means, the token's
        // syntax, the message's limits. A pure core.
        .target(name: "FCMCore", dependencies: ["JSON", "Base64URL"], swiftSettings: pureCore),
        .testTarget(name: "FCMCoreTests", dependencies: ["FCMCore", "JSON"]),
        // FCM's I/O: each service account's access token on an event loop
        // (the assertion signed with TLS's RS256, the fetch injected), and
        // the client: messages and token requests over HTTP2Client's pools,
        // a fresh access token once after FCM refuses one.
        .target(name: "FCM", dependencies: ["FCMCore", "HTTP2Client", "HTTP2", "HTTPCore", "TLS", "EventLoop"]),
        .testTarget(name: "FCMTests", dependencies: ["Base64URL", "FCM", "FCMCore", "HTTP2Client", "HTTP2", "EventLoop", "Locking", "TLS", "TestSupport", "APNsEmulator", "JSON"]),
        // The one lock type (`Locked`, a pthread mutex that ThreadSanitizer
        // sees), for every module that shares a value between threads.
        .target(name: "Locking"),
        .testTarget(name: "LockingTests", dependencies: ["Locking"]),
        // Linux headers Glibc does not import (epoll, eventfd, signalfd, prctl).
        .systemLibrary(name: "CEventLoop"),
        // The apps file: TOML text and the environment in,
        // validated app definitions out; no other I/O.
        .target(name: "AppsFile", dependencies: [
            "APNsCore", "HTTPCore", "RelayCore", .product(name: "TOMLKit", package: "TOMLKit"),
        ]),
        // VAPID (RFC 8292): a push's VAPID headers and JWT and the
        // verdict for a restricted endpoint; no I/O, the crypto injected (the
        // relay passes TLS's SHA-256 and ES256), Foundation's JSON decoder.
        .target(name: "VAPID", dependencies: ["HTTPCore", "Base64URL", "RelayCore"]),
        // The provider API's protocol: gorush's /api/push JSON to
        // APNs payloads and headers, its answers, the APNs-shaped proxy
        // request and answer; no I/O, JSON read with the strict parser.
        .target(name: "ProviderAPI", dependencies: ["APNsCore", "FCMCore", "HTTPCore", "JSON", "RelayCore"], swiftSettings: pureCore),
        // The provider API's fuzzer, built by SwiftPM (see FuzzSupport below).
        .executableTarget(name: "provider-api-fuzzer", dependencies: ["ProviderAPI", "APNsCore", "FCMCore", "HTTPCore", "JSON", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/provider-api"),
        .testTarget(name: "ProviderAPITests", dependencies: ["APNsCore", "Base64URL", "FCMCore", "ProviderAPI", "HTTPCore", "JSON", "RelayCore"]),
        // Feedback: the tokens APNs refused for good, per app
        // (`FeedbackStore`), the pull endpoint's JSON, the lists a fleet
        // shares (`SharedFeedbackList`), and the sink every path records a
        // dead token and posts a failed-push log into (`FeedbackSink`,
        // through a `HookOutbox`).
        .target(name: "Feedback", dependencies: ["APNsCore", "JSON", "Locking", "RelayCore"]),
        // One delivery, whatever the route (Web Push, gorush, the proxy,
        // pyapns): a place under MAX_IN_FLIGHT, the send, and what its end
        // records (app health, a dead token into the feedback list, the
        // failed-push log to the hook).
        .target(name: "Delivery", dependencies: ["APNsCore", "FCMCore", "RelayCore", "Feedback"]),
        .testTarget(name: "DeliveryTests", dependencies: ["APNsCore", "FCMCore", "Delivery", "HTTPCore", "RelayCore", "Feedback", "FeedbackHook",
                                                      "Observability", "TestSupport"]),
        // The asynchronous `/api/push`, in one place: the retry policy, the
        // bound on what is pending, the one queued notification (its stream
        // fields its encoding), each loop's queue through the loop's
        // delivery path, and the fleet's queue and its reader.
        .target(name: "AsyncPush", dependencies: ["APNsCore", "FCMCore", "HTTPCore", "JSON", "RelayCore", "Delivery", "Feedback",
                                                  "Fleet", "EventLoop", "Locking", "Observability"]),
        .testTarget(name: "AsyncPushTests", dependencies: ["AsyncPush", "APNsCore", "FCMCore", "Delivery", "HTTPCore", "RelayCore",
                                                           "Feedback", "FeedbackHook", "Observability", "TestSupport"]),
        // libcurl, imported by FeedbackHook only.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The feedback hook: failed-push logs queued by the event loops and
        // posted to FEEDBACK_HOOK_URL by a worker thread through libcurl,
        // with retries and backoff; Feedback's `HookOutbox` alone.
        .target(name: "FeedbackHook", dependencies: ["EventLoop", "Locking", "CCurl", "HTTPCore", "RelayCore", "Feedback",
                                                     "Observability"]),
        .testTarget(name: "FeedbackTests", dependencies: ["APNsCore", "Locking", "Feedback", "RelayCore"]),
        .testTarget(name: "FeedbackHookTests", dependencies: ["Locking", "FeedbackHook", "Observability", "TestSupport"]),
        // epoll, timers, eventfd, POSIX sockets.
        .target(name: "EventLoop", dependencies: ["Locking", "CEventLoop"]),
        // OpenSSL: contexts, non-blocking TLS stream, credentials, ES256.
        .target(name: "TLS", dependencies: ["COpenSSL"]),
        // HTTP's words, no I/O: the header field (one type for HTTP/1 and
        // HTTP/2), headers, field syntax, and HTTP/1.1's request parser,
        // requests, responses, refusals and connection state machine.
        .target(name: "HTTPCore", swiftSettings: pureCore),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore", "TestSupport"]),
        // HTTP/1.1 serving, the I/O: the listener over the event loops with
        // its connections, buffers and counters, driving HTTPCore's parser
        // and connection machine. Knows nothing of the relay: handlers plug in.
        .target(name: "HTTP1", dependencies: ["HTTPCore", "EventLoop", "TLS"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "HTTPCore", "EventLoop", "Locking", "TLS", "TestSupport"]),
        // nghttp2 sessions, bytes in and bytes out.
        .target(name: "HTTP2", dependencies: ["CNGHTTP2", "HTTPCore"]),
        // The byte pump between an HTTP/2 session and a TLS connection, and
        // the zero-delay passes that continue it, shared by the APNs client
        // and the emulator.
        .target(name: "HTTP2Transport", dependencies: ["HTTP2", "TLS", "EventLoop"]),
        // HTTP/2 for an HTTP/1.1 listener's clients that speak it (the API
        // port): the connection over a socket, plain or TLS, its machine and
        // limits; requests go to the listener's HTTP/1.1 handler.
        .target(name: "HTTP2Server", dependencies: ["HTTP1", "HTTP2", "HTTPCore", "TLS", "EventLoop"]),
        .testTarget(name: "HTTP2ServerTests", dependencies: ["HTTP2Server", "HTTP1", "HTTP2", "HTTPCore", "EventLoop", "TLS", "TestSupport"]),

        // An HTTP/2 client over TLS for the push services: pools of
        // connections to one endpoint (lazy connects, backoff, PING when
        // idle, GOAWAY, answer timeouts, resends of what the server never
        // processed), each a state machine, and the pooled request a
        // service subclasses for its request, answer and resend policy.
        .target(name: "HTTP2Client", dependencies: ["HTTP2", "HTTP2Transport", "TLS", "EventLoop", "HTTPCore"]),
        // The machines and queues, with a request of the tests' own; the
        // pool and connection over real sockets are APNsTests' (against the
        // APNs emulator).
        .testTarget(name: "HTTP2ClientTests", dependencies: ["HTTP2Client", "HTTP2", "EventLoop", "TestSupport"]),

        // APNs' words, no I/O: the notification and its request headers,
        // reasons, answers and outcomes, settings, credential ids, the
        // `NotificationSender` a delivery sends through, the provider token
        // (JWT) and its verdict, the push types and their topics.
        .target(name: "APNsCore", dependencies: ["HTTPCore", "Base64URL", "JSON"], swiftSettings: pureCore),
        .testTarget(name: "APNsCoreTests", dependencies: ["APNsCore", "Base64URL", "TestSupport"]),
        // The APNs client: credentials, JWT, its pools (HTTP2Client) per
        // credential and environment, the notification as a pooled request.
        .target(name: "APNs", dependencies: ["APNsCore", "HTTPCore", "Locking", "Base64URL", "EventLoop", "TLS", "HTTP2", "HTTP2Client"]),
        // An APNs-compatible HTTP/2 server for tests and benchmarks (and, as
        // the apns-emulator executable, the demo).
        .target(name: "APNsEmulator", dependencies: ["Locking", "APNsCore", "Base64URL", "EventLoop", "TLS", "HTTP2", "HTTP2Transport", "FCMCore", "JSON"]),
        // pyapns' provisioned apps (`ProvisionedApps`: certificates added at
        // run time, checked, in the credential catalog), and the protocol
        // through which a fleet shares them (`SharedProvisionedApps`).
        .target(name: "Provisioning", dependencies: ["APNs", "APNsCore", "Delivery", "Locking", "RelayCore", "TLS"]),
        // What the relay tells its operator: the log (one line per event,
        // batched per loop iteration on the loops), the request lines, the
        // Prometheus metrics and their endpoint. Below the concept modules
        // (Fleet, Delivery, FeedbackHook, the asynchronous queue), so that
        // they can log through a `Logger`: their counts reach the metrics as
        // numbers the daemon's tick hands over.
        .target(name: "Observability", dependencies: [
            "Locking", "EventLoop", "HTTP1", "HTTPCore", "RelayCore", "APNs", "APNsCore", "FCMCore", "VAPID",
            "HTTP2Client",
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .testTarget(name: "ObservabilityTests", dependencies: [
            "Observability", "APNs", "APNsCore", "Delivery", "EventLoop", "FCMCore", "HTTP1", "HTTPCore", "Locking", "RelayCore", "TestSupport",
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        // The front doors: the Web Push and provider API handlers on HTTP/1
        // listeners. They reach the APNs client, the fleet and the hook only
        // through the protocols of Delivery, Feedback and Provisioning.
        .target(name: "Relay", dependencies: [
            "Locking", "HTTP1", "HTTPCore", "RelayCore", "EventLoop", "TLS", "APNsCore", "FCMCore", "VAPID",
            "ProviderAPI", "Delivery", "Feedback", "XMLRPC", "PyAPNs", "Provisioning",
            "AsyncPush", "Observability",
        ]),
        // The daemon: the configuration's adapters, the apps' and
        // certificates' loading, start-up, signals, reload, shutdown.
        .target(name: "Daemon", dependencies: [
            "Locking", "HTTP1", "HTTPCore", "Relay", "Observability", "APNs", "APNsCore", "FCMCore", "RelayCore", "EventLoop",
            "TLS", "AppsFile", "ProviderAPI", "Delivery", "Feedback", "FeedbackHook", "XMLRPC", "Fleet", "Provisioning",
            "AsyncPush", "Redis", "HTTP2Client", "FCM", "HTTP2Server",
        ]),
        .testTarget(name: "DaemonTests", dependencies: [
            "Daemon", "APNs", "APNsCore", "EventLoop", "HTTP1", "HTTPCore", "Locking", "Observability", "ProviderAPI", "RelayCore",
            "TestSupport",
        ]),
        // The executable: the command line, its commands, and the demo's
        // wiring (it runs the apns-emulator executable: the relay's binary
        // links no emulator).
        .executableTarget(name: "toot-relay", dependencies: [
            "Daemon", "EventLoop", "RelayCore", "APNsCore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // The emulator as a process (end-to-end tests, the benchmark, the demo).
        .executableTarget(name: "apns-emulator", dependencies: [
            "APNsCore", "Locking", "APNsEmulator", "EventLoop", "TLS", "FCMCore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Shared by the test targets only (throwaway certificates, subprocesses,
        // waiting helpers, an HTTP/1.1 test client and server, seeded bytes,
        // socket pairs): the one home of test helpers used by more than one target.
        .target(name: "TestSupport", dependencies: ["APNsCore", "FCMCore", "HTTPCore", "Locking", "EventLoop", "RelayCore"], path: "Tests/TestSupport"),

        // The fuzzers (Fuzz/README.md), an executable each under
        // Fuzz/<target>: scripts/fuzz builds them with --sanitize=fuzzer, all
        // in one `swift build` (TOOT_RELAY_FUZZERS, at the end of this file),
        // where each is libFuzzer's LLVMFuzzerTestOneInput; a plain build makes
        // a replay tool of each. FuzzSupport: the input reader and checks
        // every fuzzer shares.
        .target(name: "FuzzSupport", path: "Fuzz/Support"),
        // The pure cores' fuzzers: the HTTP/1 parser, Web Push validation and
        // the notification it makes, base64url, z85, the routes, the provider
        // API's route and key check, APNs' answers.
        .executableTarget(name: "http1-parser-fuzzer", dependencies: ["HTTPCore", "FuzzSupport"],
                          path: "Fuzz/http1-parser"),
        .executableTarget(name: "web-push-fuzzer", dependencies: ["APNsCore", "Base64URL", "HTTPCore", "RelayCore",
                                                                  "TestSupport", "FuzzSupport"],
                          path: "Fuzz/web-push"),
        .executableTarget(name: "base64url-codec-fuzzer", dependencies: ["Base64URL", "FuzzSupport"],
                          path: "Fuzz/base64url-codec"),
        .executableTarget(name: "z85-codec-fuzzer", dependencies: ["HTTPCore", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/z85-codec"),
        .executableTarget(name: "route-fuzzer", dependencies: ["APNsCore", "Base64URL", "FCMCore", "HTTPCore", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/route"),
        .executableTarget(name: "api-request-fuzzer", dependencies: ["HTTPCore", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/api-request"),
        .executableTarget(name: "apns-answer-fuzzer", dependencies: ["APNsCore", "FuzzSupport"],
                          path: "Fuzz/apns-answer"),
        .executableTarget(name: "apps-file-fuzzer", dependencies: ["AppsFile", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/apps-file"),
        .executableTarget(name: "vapid-fuzzer", dependencies: ["Base64URL", "VAPID", "HTTPCore", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/vapid"),

        // What one VAPID signature check costs, run as
        // `swift run -c release es256-verify`: a benchmark, not a test.
        .executableTarget(name: "es256-verify", dependencies: ["TLS"], path: "Benchmarks/es256-verify"),

        .testTarget(name: "RelayCoreTests", dependencies: ["Base64URL", "APNsCore", "FCMCore", "HTTPCore", "RelayCore", "TestSupport"]),
        .testTarget(name: "AppsFileTests", dependencies: ["APNsCore", "AppsFile", "RelayCore"]),
        .testTarget(name: "VAPIDTests", dependencies: ["Base64URL", "VAPID", "HTTPCore", "RelayCore"]),
        .testTarget(name: "EventLoopTests", dependencies: ["Locking", "EventLoop", "TestSupport"]),
        // The TLS tests reach OpenSSL directly for what only they need
        // (Tests/TLSTests/OpenSSLTestHooks.swift): an isolated library
        // context, a TLS 1.2 cap, the linked version.
        .testTarget(name: "TLSTests", dependencies: ["TLS", "COpenSSL", "TestSupport"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2", "HTTPCore"]),
        .testTarget(name: "APNsTests", dependencies: ["Base64URL", "APNs", "APNsCore", "APNsEmulator", "HTTP2Client", "HTTPCore", "Locking", "TestSupport"]),
        .testTarget(name: "APNsEmulatorTests", dependencies: ["Base64URL", "APNsCore", "Locking", "APNsEmulator", "HTTP2", "HTTP2Transport", "HTTPCore", "TLS", "EventLoop", "TestSupport", "FCMCore", "JSON"]),
        .testTarget(name: "RelayTests", dependencies: [
            "Base64URL", "Locking", "HTTP1", "HTTPCore", "Relay", "Observability", "APNs", "APNsCore", "FCMCore", "APNsEmulator", "TestSupport", "ProviderAPI", "Delivery", "Feedback",
            "FeedbackHook", "XMLRPC", "Provisioning", "AsyncPush",
        ]),

        // libxml2 for the XML-RPC decoder, imported by XMLRPC only.
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // XML-RPC: a methodCall's bytes in (libxml2, no DTD, no
        // entities, caps), values out; methodResponse and fault encoders.
        .target(name: "XMLRPC", dependencies: ["CLibXML2", "RelayCore"]),
        // pyapns' provision / notify / feedback as a pure mapping
        // from an XML-RPC call, and its answers and faults; no I/O.
        .target(name: "PyAPNs", dependencies: ["APNsCore", "JSON", "XMLRPC", "HTTPCore", "RelayCore"]),
        // The XML-RPC and pyapns fuzzer, built by SwiftPM.
        .executableTarget(name: "xmlrpc-fuzzer", dependencies: ["APNsCore", "XMLRPC", "PyAPNs", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/xmlrpc"),
        .testTarget(name: "XMLRPCTests", dependencies: ["XMLRPC", "RelayCore"]),
        .testTarget(name: "PyAPNsTests", dependencies: ["PyAPNs", "XMLRPC", "HTTPCore", "RelayCore"]),

        // hiredis 0.14.1 (its RESP reader and command formatter), imported by
        // Redis only. No pkgConfig: hiredis.pc's Cflags carry
        // -D_FILE_OFFSET_BITS=64, which SwiftPM drops with a "prohibited
        // flag" warning on every build of the module; the headers are
        // <hiredis/…> in /usr/include, and the flag changes nothing on 64-bit
        // Linux, where off_t has 64 bits anyway.
        .systemLibrary(
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        // Redis: its URL, its replies as values, and a connection on the
        // relay's event loop (the loop's own socket; hiredis parses and
        // formats, with the relay's limits on what it reads).
        .target(name: "Redis", dependencies: ["CHiredis", "EventLoop"]),
        // Reaches a real redis-server (TestSupport's RedisServer starts one).
        .testTarget(name: "RedisTests", dependencies: ["Redis", "EventLoop", "Locking", "TestSupport"]),
        // What the instances of a fleet share through Redis: the links to it
        // (a thread of their own each), its keys, and the shared state
        // built on them (feedback lists, the hook's posts, provisioned
        // apps, provider tokens), each behind the protocol its users see.
        .target(name: "Fleet", dependencies: ["Redis", "EventLoop", "Locking", "Feedback", "FeedbackHook", "APNs", "FCM",
                                              "APNsCore", "FCMCore", "RelayCore", "Provisioning", "Observability"]),
        .testTarget(name: "FleetTests", dependencies: ["Fleet", "Redis", "EventLoop", "Locking", "TestSupport",
                                                     "Provisioning", "RelayCore", "APNs", "APNsCore", "TLS", "Feedback",
                                                     "FeedbackHook", "Observability", "FCM", "FCMCore"]),
        // hiredis' reader with the relay's limits, fed in random pieces; built by SwiftPM.
        .executableTarget(name: "redis-reply-fuzzer", dependencies: ["Redis", "FuzzSupport"],
                          path: "Fuzz/redis-reply"),
        // What instances read back from Redis (a feedback value, a queued
        // notification's fields), fuzzed; built by SwiftPM.
        .executableTarget(name: "fleet-values-fuzzer",
                          dependencies: ["Fleet", "AsyncPush", "Feedback", "FuzzSupport", "Redis", "FCMCore"],
                          path: "Fuzz/fleet-values"),
        // What FCMCore reads from outside (a send's answer, the token
        // endpoint's, a service account's file), fuzzed; built by SwiftPM.
        .executableTarget(name: "fcm-answer-fuzzer", dependencies: ["FCMCore", "JSON", "Base64URL", "FuzzSupport"],
                          path: "Fuzz/fcm-answer"),
        // An HTTP/2 client's bytes through the server session to the requests
        // the API's handler gets, fuzzed; built by SwiftPM.
        .executableTarget(name: "http2-server-fuzzer", dependencies: ["HTTP2Server", "HTTP2", "HTTPCore", "FuzzSupport"],
                          path: "Fuzz/http2-server"),
    ],
    swiftLanguageModes: [.v6]
)

// Release builds let the modules on the request path inline and specialise
// each other's generic code (HTTPHeaders' byte views, the payload sinks):
// without it, a request's header parsing across the HTTPCore/RelayCore
// boundary ran unspecialised (Slice subscripts, metadata lookups), measured
// with callgrind at about 300,000 more instructions per Web Push notification.
for target in package.targets where target.type == .regular || target.type == .executable {
    target.swiftSettings = (target.swiftSettings ?? [])
        + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
}

// scripts/fuzz builds every fuzzer it runs with one `swift build`: SwiftPM
// builds either one product (`--product` takes one) or every target, and
// under --sanitize=fuzzer every executable becomes a libFuzzer binary, which
// the daemon, the emulator and the benchmark cannot be. So when
// TOOT_RELAY_FUZZERS names products (space-separated), the package is those
// and the targets they depend on.
if let fuzzers = Context.environment["TOOT_RELAY_FUZZERS"] {
    var kept = Set(fuzzers.split(separator: " ").map(String.init))
    var grew = true
    while grew {
        grew = false
        for target in package.targets where kept.contains(target.name) {
            for dependency in target.dependencies {
                switch dependency {
                case .targetItem(let name, _), .byNameItem(let name, _):
                    if kept.insert(name).inserted { grew = true }
                default:
                    break
                }
            }
        }
    }
    package.targets.removeAll { !kept.contains($0.name) }
    package.products = []
}
