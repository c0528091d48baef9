// swift-tools-version:6.0
import PackageDescription

// toot-relay: a Web Push (RFC 8030) to APNs relay.
// C libraries enter only through the system-library targets; each is
// imported by exactly one Swift module (TLS for OpenSSL, HTTP2 for nghttp2,
// XMLRPC for libxml2, FeedbackHook for libcurl, Redis for hiredis, EventLoop
// for the Linux headers; ARCHITECTURE.md §5.2), and by that module's tests
// where they need it.
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
        // parsing, the APNs request a Web Push message becomes (payload,
        // z85), status mapping, configuration.
        .target(name: "RelayCore", dependencies: ["HTTP1", "Base64URL", "APNs"]),
        // Base64 (RFC 4648) decoding and base64url encoding: Web Push keys,
        // VAPID and APNs' JWTs, P12_BASE64.
        .target(name: "Base64URL"),
        .testTarget(name: "Base64URLTests", dependencies: ["Base64URL", "TestSupport"]),
        // The one lock type (`Locked`, a pthread mutex that ThreadSanitizer
        // sees), for every module that shares a value between threads.
        .target(name: "Locking"),
        .testTarget(name: "LockingTests", dependencies: ["Locking"]),
        // Linux headers Glibc does not import (epoll, eventfd, signalfd, prctl).
        .systemLibrary(name: "CEventLoop"),
        // The apps file: TOML text and the environment in,
        // validated app definitions out; no other I/O.
        .target(name: "AppsFile", dependencies: [
            "APNs", "RelayCore", .product(name: "TOMLKit", package: "TOMLKit"),
        ]),
        // VAPID (RFC 8292): a push's VAPID headers and JWT and the
        // verdict for a restricted endpoint; no I/O, the crypto injected (the
        // relay passes TLS's SHA-256 and ES256), Foundation's JSON decoder.
        .target(name: "VAPID", dependencies: ["HTTP1", "Base64URL", "RelayCore"]),
        // The provider API's protocol: gorush's /api/push JSON to
        // APNs payloads and headers, its answers, the APNs-shaped proxy
        // request and answer; no I/O, a strict JSON parser of its own.
        .target(name: "ProviderAPI", dependencies: ["APNs", "HTTP1", "RelayCore"]),
        // The provider API's fuzzer, built by SwiftPM (see FuzzSupport below).
        .executableTarget(name: "provider-api-fuzzer", dependencies: ["ProviderAPI", "HTTP1", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/provider-api"),
        .testTarget(name: "ProviderAPITests", dependencies: ["APNs", "ProviderAPI", "HTTP1", "RelayCore"]),
        // Feedback: the tokens APNs refused for good, per app
        // (`FeedbackStore`), and the pull endpoint's JSON.
        .target(name: "Feedback", dependencies: ["APNs", "Locking", "RelayCore"]),
        // One delivery, whatever the route (Web Push, gorush, the proxy,
        // pyapns): a place under MAX_IN_FLIGHT, the send, and what its end
        // records (app health, a dead token into the feedback list, the
        // failed-push log to the hook).
        .target(name: "Delivery", dependencies: ["APNs", "RelayCore", "ProviderAPI", "Feedback", "FeedbackHook"]),
        .testTarget(name: "DeliveryTests", dependencies: ["APNs", "Delivery", "HTTP1", "RelayCore", "ProviderAPI", "Feedback", "FeedbackHook", "TestSupport"]),
        // libcurl, imported by FeedbackHook only.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The feedback hook: failed-push logs queued by the event loops and
        // posted to FEEDBACK_HOOK_URL by a worker thread through libcurl,
        // with retries and backoff.
        .target(name: "FeedbackHook", dependencies: ["Locking", "CCurl", "HTTP1", "RelayCore"]),
        .testTarget(name: "FeedbackTests", dependencies: ["APNs", "Locking", "Feedback", "RelayCore"]),
        .testTarget(name: "FeedbackHookTests", dependencies: ["Locking", "FeedbackHook", "TestSupport"]),
        // epoll, timers, eventfd, POSIX sockets.
        .target(name: "EventLoop", dependencies: ["Locking", "CEventLoop"]),
        // OpenSSL: contexts, non-blocking TLS stream, credentials, ES256.
        .target(name: "TLS", dependencies: ["COpenSSL"]),
        // HTTP/1.1 serving: the request parser, headers and responses, the
        // connection state machine (Sources/HTTP1/Protocol: no I/O, which
        // the RelayCore fuzzers compile), and the listener over the event
        // loops with its connections, buffers and counters. Knows nothing
        // of the relay: handlers plug in.
        .target(name: "HTTP1", dependencies: ["EventLoop", "TLS"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "EventLoop", "Locking", "TLS", "TestSupport"]),
        // nghttp2 sessions, bytes in and bytes out.
        .target(name: "HTTP2", dependencies: ["CNGHTTP2"]),
        // The byte pump between an HTTP/2 session and a TLS connection, and
        // the zero-delay passes that continue it, shared by the APNs client
        // and the emulator.
        .target(name: "HTTP2Transport", dependencies: ["HTTP2", "TLS", "EventLoop"]),

        // APNs: its words without I/O (Sources/APNs/Protocol: the
        // notification, reasons, outcomes, settings; what the RelayCore
        // fuzzers compile) and the client: credentials, JWT, connections, pools.
        .target(name: "APNs", dependencies: ["Locking", "HTTP1", "Base64URL", "EventLoop", "TLS", "HTTP2", "HTTP2Transport"]),
        // An APNs-compatible HTTP/2 server for tests and benchmarks (and, as
        // the apns-emulator executable, the demo).
        .target(name: "APNsEmulator", dependencies: ["Locking", "APNs", "Base64URL", "EventLoop", "TLS", "HTTP2", "HTTP2Transport"]),
        // What the relay tells its operator: the log (one line per event,
        // batched per loop iteration on the loops), the request lines, the
        // Prometheus metrics and their endpoint. Below the concept modules
        // (Fleet, Delivery, FeedbackHook, the asynchronous queue), so that
        // they can log through a `Logger`: their counts reach the metrics as
        // numbers the daemon's tick hands over.
        .target(name: "Observability", dependencies: [
            "Locking", "EventLoop", "HTTP1", "RelayCore", "APNs", "VAPID",
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .testTarget(name: "ObservabilityTests", dependencies: [
            "Observability", "APNs", "EventLoop", "HTTP1", "Locking", "RelayCore", "TestSupport",
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        // The daemon's server: the Web Push and provider API handlers on
        // HTTP/1 listeners.
        .target(name: "Relay", dependencies: [
            "Locking", "HTTP1", "RelayCore", "EventLoop", "TLS", "APNs", "VAPID",
            "ProviderAPI", "Delivery", "Feedback", "FeedbackHook", "XMLRPC", "PyAPNs", "Fleet", "Observability",
        ]),
        // The daemon: the configuration's adapters, the apps' and
        // certificates' loading, start-up, signals, reload, shutdown.
        .target(name: "Daemon", dependencies: [
            "Locking", "HTTP1", "Relay", "Observability", "APNs", "RelayCore", "EventLoop", "TLS",
            "AppsFile", "ProviderAPI", "Delivery", "Feedback", "FeedbackHook", "XMLRPC", "Fleet", "Redis",
        ]),
        .testTarget(name: "DaemonTests", dependencies: [
            "Daemon", "APNs", "EventLoop", "HTTP1", "Locking", "Observability", "RelayCore", "TestSupport",
        ]),
        // The executable: the command line, its commands, and the demo's
        // wiring (it runs the apns-emulator executable: the relay's binary
        // links no emulator).
        .executableTarget(name: "toot-relay", dependencies: [
            "Daemon", "EventLoop", "RelayCore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // The emulator as a process (end-to-end tests, the benchmark, the demo).
        .executableTarget(name: "apns-emulator", dependencies: [
            "APNs", "Locking", "APNsEmulator", "EventLoop", "TLS",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Shared by the test targets only (throwaway certificates, subprocesses,
        // waiting helpers, an HTTP/1.1 test client and server, seeded bytes,
        // socket pairs): the one home of test helpers used by more than one target.
        .target(name: "TestSupport", dependencies: ["APNs", "Locking", "EventLoop", "RelayCore"], path: "Tests/TestSupport"),

        // The fuzzers SwiftPM builds (Fuzz/README.md): scripts/fuzz builds
        // them with --sanitize=fuzzer, as they need more than RelayCore (toml++
        // is C++; VAPID is a module of its own on Foundation) and cannot join
        // the RelayCore fuzzers' one-module swiftc builds; a plain build makes
        // a replay tool of each. FuzzSupport: the input reader and checks
        // every fuzzer shares.
        .target(name: "FuzzSupport", path: "Fuzz/Support"),
        .executableTarget(name: "apps-file-fuzzer", dependencies: ["AppsFile", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/apps-file"),
        .executableTarget(name: "vapid-fuzzer", dependencies: ["Base64URL", "VAPID", "HTTP1", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/vapid"),

        // What one VAPID signature check costs, run as
        // `swift run -c release es256-verify`: a benchmark, not a test.
        .executableTarget(name: "es256-verify", dependencies: ["TLS"], path: "Benchmarks/es256-verify"),

        .testTarget(name: "RelayCoreTests", dependencies: ["Base64URL", "APNs", "HTTP1", "RelayCore", "TestSupport"]),
        .testTarget(name: "AppsFileTests", dependencies: ["APNs", "AppsFile", "RelayCore"]),
        .testTarget(name: "VAPIDTests", dependencies: ["Base64URL", "VAPID", "HTTP1", "RelayCore"]),
        .testTarget(name: "EventLoopTests", dependencies: ["Locking", "EventLoop", "TestSupport"]),
        // The TLS tests reach OpenSSL directly for what only they need
        // (Tests/TLSTests/OpenSSLTestHooks.swift): an isolated library
        // context, a TLS 1.2 cap, the linked version.
        .testTarget(name: "TLSTests", dependencies: ["TLS", "COpenSSL", "TestSupport"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2"]),
        .testTarget(name: "APNsTests", dependencies: ["Base64URL", "APNs", "APNsEmulator", "HTTP1", "Locking", "TestSupport"]),
        .testTarget(name: "APNsEmulatorTests", dependencies: ["Base64URL", "APNs", "Locking", "APNsEmulator", "HTTP2", "HTTP2Transport", "TLS", "EventLoop", "TestSupport"]),
        .testTarget(name: "RelayTests", dependencies: [
            "Base64URL", "Locking", "HTTP1", "Relay", "Observability", "APNs", "APNsEmulator", "TestSupport", "ProviderAPI", "Delivery", "Feedback",
            "FeedbackHook", "XMLRPC",
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
        .target(name: "PyAPNs", dependencies: ["APNs", "XMLRPC", "HTTP1", "RelayCore"]),
        // The XML-RPC and pyapns fuzzer, built by SwiftPM.
        .executableTarget(name: "xmlrpc-fuzzer", dependencies: ["APNs", "XMLRPC", "PyAPNs", "RelayCore", "FuzzSupport"],
                          path: "Fuzz/xmlrpc"),
        .testTarget(name: "XMLRPCTests", dependencies: ["XMLRPC", "RelayCore"]),
        .testTarget(name: "PyAPNsTests", dependencies: ["PyAPNs", "XMLRPC", "HTTP1", "RelayCore"]),

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
        // built on them.
        .target(name: "Fleet", dependencies: ["Redis", "EventLoop", "Locking", "Feedback", "APNs"]),
        .testTarget(name: "FleetTests", dependencies: ["Fleet", "Redis", "EventLoop", "Locking", "TestSupport",
                                                     "Relay", "RelayCore", "APNs", "TLS", "Feedback", "FeedbackHook"]),
        // hiredis' reader with the relay's limits, fed in random pieces; built by SwiftPM.
        .executableTarget(name: "redis-reply-fuzzer", dependencies: ["Redis", "FuzzSupport"],
                          path: "Fuzz/redis-reply"),
        // What instances read back from Redis (a feedback value, a queued
        // notification's fields), fuzzed; built by SwiftPM.
        .executableTarget(name: "fleet-values-fuzzer", dependencies: ["Fleet", "Delivery", "FuzzSupport", "Redis"],
                          path: "Fuzz/fleet-values"),
    ],
    swiftLanguageModes: [.v6]
)

// Release builds let the modules on the request path inline and specialise
// each other's generic code (HTTPHeaders' byte views, the payload sinks):
// without it, a request's header parsing across the HTTP1/RelayCore
// boundary ran unspecialised (Slice subscripts, metadata lookups), measured
// with callgrind at about 300,000 more instructions per Web Push notification.
for target in package.targets where target.type == .regular || target.type == .executable {
    target.swiftSettings = (target.swiftSettings ?? [])
        + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
}
