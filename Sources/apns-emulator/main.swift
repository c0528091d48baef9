// apns-emulator: an APNs-compatible HTTP/2 server on loopback for tests, the
// benchmark and demos. First stdout line: `listening on HOST:PORT`.
// SIGTERM/SIGINT: clean exit 0 with a stats line on stderr.
import APNsCore
import APNsEmulator
import ArgumentParser
import EventLoop
import FCMCore
import Foundation
import Locking
import TLS

struct APNsEmulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-emulator",
        abstract: "An APNs-compatible HTTP/2 server (TLS, ALPN h2) for tests and benchmarks.",
        discussion: """
            Authentication: --client-ca (client certificates), --token-key and --provider-key \
            (provider tokens), both (per connection, as one APNs host serves both kinds of \
            provider: a verified client certificate rules its connection and any authorization \
            header on it is ignored, as APNs does; a connection without one needs provider \
            tokens), or --no-client-auth.

            Provider tokens as APNs takes them: a connection is bound to the key of the first \
            token it takes (a token of another key on it: 403 UnrelatedKeyIdInToken); with \
            --token-update-interval, a key's new token (a new iat) sooner than that after its \
            previous new one is 429 TooManyProviderTokenUpdates (tokens taken before stay good).

            Fault injection: a device token starting with fa11fa11 followed by a two-digit \
            code gets a chosen failure (see APNsFaultToken in Sources/APNsEmulator/FaultInjection.swift).

            FCM HTTP v1 on the same listener with --fcm-service-account: the token endpoint at each \
            account's token_uri path (RFC 7523 assertions checked as Google checks them: RS256 \
            against the account's key, kid, iss, scope, aud, iat, exp) and \
            POST /v1/projects/<project_id>/messages:send (an access token it issued for that \
            project, the message's schema, data size and TTL). A client certificate is then \
            requested, not required: an APNs request on a connection without one is 403 \
            MissingProviderToken. FCM faults: a registration token starting with fa11fa11 and a \
            two-digit code (see FCMFaultToken in Sources/APNsEmulator/FCMFaults.swift). SIGHUP \
            re-reads --fcm-revoked-keys.
            """)

    @Option(help: "Numeric address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port (0: any free port; read it from the first stdout line).") var port: UInt16 = 0
    @Option(help: "Server certificate (PEM).") var certificate: String
    @Option(help: "Server private key (PEM).") var key: String
    @Option(name: .customLong("client-ca"),
            help: ArgumentHelp(
                "Client certificates signed by a CA in this PEM file (it may hold several); each certificate's UID is its topic.",
                discussion: "Required of every client; with --token-key or --provider-key only requested, "
                    + "and a connection without one is held to the provider keys."))
    var clientCA: String?
    @Option(name: .customLong("token-key"),
            help: "Token auth: the provider key's public half (PEM), valid in both environments for any topic (may be combined with --client-ca).")
    var tokenKey: String?
    @Option(name: .customLong("key-id"), help: "Token auth: expected JWT kid.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "Token auth: expected JWT iss.") var teamID: String?
    @Option(name: .customLong("provider-key"), help: ArgumentHelp(
        "Token auth, repeatable: one more provider key (with or without --token-key; may be combined with --client-ca).",
        discussion: "key-id=ID,team-id=TEAM,public-key=PEM[,environment=production|development]...[,topic=TOPIC]...: "
            + "environments default to both; topics make it a topic-specific key.",
        valueName: "fields"))
    var providerKeys: [String] = []
    @Option(help: "The APNs environment played: production or development (keys scoped to the other one are refused).")
    var environment = "production"
    @Flag(name: .customLong("no-client-auth"), help: "Check no credentials (for h2load).") var noClientAuth = false
    @Option(help: "The app the device tokens belong to (another apns-topic: 400 DeviceTokenNotForTopic).")
    var topic: String?
    @Option(name: .customLong("delay-ms"), help: "Delay before every answer, in milliseconds.") var delayMilliseconds = 0
    @Option(name: .customLong("max-streams"), help: "SETTINGS_MAX_CONCURRENT_STREAMS.") var maxStreams: UInt32 = 1000
    @Option(name: .customLong("initial-max-streams"), help: "Announce this first, raise to --max-streams after the first request.")
    var initialMaxStreams: UInt32?
    @Option(name: .customLong("goaway-after"), help: "Per connection: GOAWAY after the N-th request (later streams refused).")
    var goAwayAfter: Int?
    @Option(name: .customLong("drop-after"), help: "Per connection: the N-th request closes the TCP connection unanswered.")
    var dropAfter: Int?
    @Option(name: .customLong("connection-window"),
            help: "Connection flow-control window in bytes announced to clients (default: HTTP/2's 65535).")
    var connectionWindow: Int?
    @Option(name: .customLong("token-update-interval"),
            help: ArgumentHelp(
                "Token auth: seconds a key waits between two new tokens; sooner is 429 TooManyProviderTokenUpdates.",
                discussion: "Apple allows one new token per key every 20 minutes (1200). 0: not enforced.",
                valueName: "seconds"))
    var tokenUpdateInterval = 0
    @Option(name: .customLong("unavailable-first"),
            help: "The first N valid requests (tokens outside the fault table), across all connections, are answered 503 ServiceUnavailable; later ones as usual.")
    var unavailableFirst: Int?
    @Option(help: "Loop threads (one SO_REUSEPORT listener each).") var threads = 1
    @Flag(help: "No connection log on stderr.") var quiet = false
    @Flag(name: .customLong("print"), help: "One JSON line per accepted notification on stdout.") var printNotifications = false
    @Option(help: "Append the same JSON lines to this file (flushed per line).") var record: String?
    @Option(name: .customLong("broadcast-record"),
            help: "Append one JSON line per accepted Live Activity broadcast to this file (flushed per line).")
    var broadcastRecord: String?
    @Option(name: .customLong("fcm-service-account"), help: ArgumentHelp(
        "FCM, repeatable: a service-account JSON file whose account the token endpoint trusts.",
        discussion: "Its token_uri's path is the token endpoint (tests: https://127.0.0.1:<port>/token); "
            + "its private key's public half checks the assertions.", valueName: "file"))
    var fcmServiceAccounts: [String] = []
    @Option(name: .customLong("fcm-token-lifetime"), help: ArgumentHelp(
        "FCM: the expires_in of the access tokens issued; a token is refused after it.", valueName: "seconds"))
    var fcmTokenLifetime = 3600
    @Option(name: .customLong("fcm-record"),
            help: "FCM: append one JSON line per accepted message to this file (flushed per line).")
    var fcmRecord: String?
    @Option(name: .customLong("fcm-revoked-keys"), help: ArgumentHelp(
        "FCM: a file of private_key_ids (one a line) the token endpoint refuses (400 invalid_grant).",
        discussion: "Read at start and again on SIGHUP, so a test revokes a key at run time; a missing file "
            + "revokes nothing. Access tokens issued before stay good until they expire.", valueName: "file"))
    var fcmRevokedKeys: String?

    func validate() throws {
        let tokens = tokenKey != nil || !providerKeys.isEmpty
        if noClientAuth, clientCA != nil || tokens {
            throw ValidationError("--no-client-auth checks no credentials: it cannot be combined with --client-ca, "
                + "--token-key or --provider-key")
        }
        guard noClientAuth || clientCA != nil || tokens else {
            throw ValidationError("choose --client-ca, --token-key (with --key-id, --team-id) or --provider-key "
                + "(--client-ca combines with either), or --no-client-auth")
        }
        if tokenKey != nil, keyID == nil || teamID == nil {
            throw ValidationError("--token-key needs --key-id and --team-id")
        }
        if tokenKey == nil, keyID != nil || teamID != nil {
            throw ValidationError("--key-id and --team-id belong to --token-key")
        }
        guard APNsEnvironment(rawValue: environment) != nil else {
            throw ValidationError("--environment must be production or development, not \"\(environment)\"")
        }
        _ = try keys()
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard delayMilliseconds >= 0 else { throw ValidationError("--delay-ms must not be negative") }
        guard tokenUpdateInterval >= 0 else { throw ValidationError("--token-update-interval must not be negative") }
        guard (1...Int(Int32.max)).contains(connectionWindow ?? 1) else {
            throw ValidationError("--connection-window must be within 1...2147483647")
        }
        guard (unavailableFirst ?? 1) >= 1 else { throw ValidationError("--unavailable-first must be at least 1") }
        guard (goAwayAfter ?? 1) >= 1, (dropAfter ?? 1) >= 1 else {
            throw ValidationError("--goaway-after and --drop-after must be at least 1")
        }
        if fcmServiceAccounts.isEmpty, fcmRecord != nil || fcmRevokedKeys != nil {
            throw ValidationError("--fcm-record and --fcm-revoked-keys need --fcm-service-account")
        }
        guard fcmTokenLifetime >= 1 else { throw ValidationError("--fcm-token-lifetime must be at least 1") }
        _ = try fcmConfiguration()
    }

    /// The FCM side, nil without --fcm-service-account; a broken file is a
    /// usage error naming it and the field, never the key.
    func fcmConfiguration() throws -> FCMEmulatorConfiguration? {
        guard !fcmServiceAccounts.isEmpty else { return nil }
        var accounts: [FCMServiceAccount] = []
        for path in fcmServiceAccounts {
            do {
                accounts.append(try FCMServiceAccount(json: try CredentialFile.read(path)))
            } catch {
                throw ValidationError("--fcm-service-account \(path): \(error)")
            }
        }
        return FCMEmulatorConfiguration(serviceAccounts: accounts, tokenLifetime: fcmTokenLifetime)
    }

    /// The private_key_ids of --fcm-revoked-keys (none when the file does not exist).
    func revokedKeyIDs() -> Set<String> {
        guard let fcmRevokedKeys, let text = try? String(contentsOfFile: fcmRevokedKeys, encoding: .utf8) else { return [] }
        return Set(text.split(whereSeparator: \.isNewline).map { String($0).trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty })
    }

    /// `--token-key` (one team key for both environments) and
    /// every `--provider-key`; a bad file or field is a usage error naming it.
    func keys() throws -> [APNsEmulatorProviderKey] {
        var keys: [APNsEmulatorProviderKey] = []
        do {
            if let tokenKey, let keyID, let teamID {
                let pem: [UInt8]
                do { pem = try CredentialFile.read(tokenKey) } catch { throw APNsEmulatorError.providerKey(keyID: keyID, error) }
                keys.append(APNsEmulatorProviderKey(keyID: keyID, teamID: teamID, publicKeyPEM: pem))
            }
            for specification in providerKeys {
                keys.append(try APNsEmulatorProviderKey(specification: specification))
            }
        } catch {
            throw ValidationError("\(error)")
        }
        return keys
    }

    func run() throws {
        ignoreSIGPIPE()
        // Blocked before any thread starts, so only waitForBlockedSignal below sees them.
        try SignalSource.block([SIGTERM, SIGINT, SIGHUP])

        let keys = try keys()
        let authentication: APNsEmulatorAuthentication
        switch (clientCA, keys.isEmpty) {
        case (let caFile?, true): authentication = .clientCertificate(caFile: caFile)
        case (let caFile?, false): authentication = .clientCertificateOrProviderKeys(caFile: caFile, keys: keys)
        case (nil, false): authentication = .providerKeys(keys)
        case (nil, true): authentication = .none
        }
        let behavior = APNsEmulatorBehavior(
            forcedAction: unavailableFirst.map { _ in .reject(.serviceUnavailable) }, forcedCount: unavailableFirst,
            responseDelay: .milliseconds(delayMilliseconds), maxConcurrentStreams: maxStreams,
            initialMaxConcurrentStreams: initialMaxStreams, goAwayAfterStreams: goAwayAfter,
            dropAfterStreams: dropAfter, connectionWindowSize: connectionWindow, fcmRevokedKeyIDs: revokedKeyIDs())
        let configuration = APNsEmulatorConfiguration(
            host: host, port: port, certificateFile: certificate, privateKeyFile: key,
            authentication: authentication, environment: APNsEnvironment(rawValue: environment) ?? .production,
            expectedTopic: topic, threads: threads,
            recordNotifications: false, log: !quiet, behavior: behavior, tokenUpdateInterval: tokenUpdateInterval,
            fcm: try fcmConfiguration())
        let emulator = try APNsEmulator(configuration: configuration)

        if printNotifications || record != nil {
            let output = try NotificationOutput(printToStandardOutput: printNotifications, recordFile: record)
            emulator.onNotification = { output.write($0.jsonLine) }
        }
        if let broadcastRecord {
            let output = try NotificationOutput(printToStandardOutput: false, recordFile: broadcastRecord)
            emulator.onBroadcast = { output.write($0.jsonLine) }
        }
        if let fcmRecord {
            let output = try NotificationOutput(printToStandardOutput: false, recordFile: fcmRecord)
            emulator.onFCMMessage = { output.write($0.jsonLine) }
        }
        try emulator.start()
        writeAll(1, "listening on \(host):\(emulator.port)\n")

        while waitForBlockedSignal([SIGTERM, SIGINT, SIGHUP]) == SIGHUP {
            let revoked = revokedKeyIDs()
            emulator.update { $0.fcmRevokedKeyIDs = revoked }
            if !quiet { writeAll(2, "apns-emulator: FCM keys revoked: \(revoked.sorted())\n") }
        }
        emulator.stop()
        let stats = emulator.statistics
        writeAll(2, "apns-emulator: stopped: received \(stats.received), accepted \(stats.accepted), "
            + "rejected \(stats.rejected), unanswered \(stats.unanswered), reset \(stats.resetStreams), "
            + "dropped connections \(stats.droppedConnections), duplicate apns-ids \(stats.duplicateAPNsIDs), "
            + "connections \(stats.connections), handshake failures \(stats.handshakeFailures)\n")
        if configuration.fcm != nil {
            let fcm = emulator.fcmStatistics
            writeAll(2, "apns-emulator: FCM: token requests \(fcm.tokenRequests), issued \(fcm.tokensIssued), "
                + "refused \(fcm.tokenRefusals); messages received \(fcm.received), accepted \(fcm.accepted), "
                + "rejected \(fcm.rejected), unanswered \(fcm.unanswered)\n")
        }
    }
}

/// Writes JSON lines from any loop thread, one whole line per write(2).
final class NotificationOutput: Sendable {
    private let printToStandardOutput: Bool
    private let recordDescriptor: Int32
    /// Lines written, under the lock that keeps each line whole. Not
    /// `Locked(())`: a zero-sized value shares its address with the
    /// mutex's pointer, and ThreadSanitizer then took one thread's access to
    /// the value for a race with another's read of the pointer (a 20,000-
    /// notification run with --record on two threads).
    private let linesWritten = Locked(0)

    init(printToStandardOutput: Bool, recordFile: String?) throws {
        self.printToStandardOutput = printToStandardOutput
        if let recordFile {
            let descriptor = open(recordFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw ValidationError("cannot open \(recordFile): \(String(cString: strerror(errno)))")
            }
            recordDescriptor = descriptor
        } else {
            recordDescriptor = -1
        }
    }

    func write(_ line: String) {
        let text = line + "\n"
        linesWritten.withLock { count in
            if printToStandardOutput { writeAll(1, text) }
            if recordDescriptor >= 0 { writeAll(recordDescriptor, text) }
            count += 1
        }
    }
}

APNsEmulatorCommand.main()
