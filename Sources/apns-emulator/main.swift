// apns-emulator: an APNs-compatible HTTP/2 server on loopback for tests, the
// benchmark and demos. First stdout line: `listening on HOST:PORT`.
// SIGTERM/SIGINT: clean exit 0 with a stats line on stderr.
import APNsEmulator
import ArgumentParser
import EventLoop
import Foundation
import Synchronization
import TLS

struct APNsEmulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-emulator",
        abstract: "An APNs-compatible HTTP/2 server (TLS, ALPN h2) for tests and benchmarks.",
        discussion: """
            Fault injection: a device token starting with fa11fa11 followed by a two-digit \
            code gets a chosen failure (see APNsFaultToken in Sources/APNsEmulator/FaultInjection.swift).
            """)

    @Option(help: "Numeric address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port (0: any free port; read it from the first stdout line).") var port: UInt16 = 0
    @Option(help: "Server certificate (PEM).") var certificate: String
    @Option(help: "Server private key (PEM).") var key: String
    @Option(name: .customLong("client-ca"), help: "Require client certificates signed by this CA (PEM).")
    var clientCA: String?
    @Option(name: .customLong("token-key"), help: "Token auth: the provider key's public half (PEM).")
    var tokenKey: String?
    @Option(name: .customLong("key-id"), help: "Token auth: expected JWT kid.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "Token auth: expected JWT iss.") var teamID: String?
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
    @Option(help: "Loop threads (one SO_REUSEPORT listener each).") var threads = 1
    @Flag(help: "No connection log on stderr.") var quiet = false
    @Flag(name: .customLong("print"), help: "One JSON line per accepted notification on stdout.") var printNotifications = false
    @Option(help: "Append the same JSON lines to this file (flushed per line).") var record: String?

    func validate() throws {
        let modes = [clientCA != nil, tokenKey != nil, noClientAuth].filter { $0 }.count
        guard modes == 1 else {
            throw ValidationError("choose exactly one of --client-ca, --token-key (with --key-id, --team-id), --no-client-auth")
        }
        if tokenKey != nil, keyID == nil || teamID == nil {
            throw ValidationError("--token-key needs --key-id and --team-id")
        }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard delayMilliseconds >= 0 else { throw ValidationError("--delay-ms must not be negative") }
        guard (1...Int(Int32.max)).contains(connectionWindow ?? 1) else {
            throw ValidationError("--connection-window must be within 1...2147483647")
        }
        guard (goAwayAfter ?? 1) >= 1, (dropAfter ?? 1) >= 1 else {
            throw ValidationError("--goaway-after and --drop-after must be at least 1")
        }
    }

    func run() throws {
        ignoreSIGPIPE()
        // Blocked before any thread starts, so only waitForBlockedSignal below sees them.
        try SignalSource.block([SIGTERM, SIGINT])

        let authentication: APNsEmulatorAuthentication
        if let clientCA {
            authentication = .clientCertificate(caFile: clientCA)
        } else if let tokenKey, let keyID, let teamID {
            authentication = .token(publicKeyPEM: try CredentialFile.read(tokenKey), keyID: keyID, teamID: teamID)
        } else {
            authentication = .none
        }
        let behavior = APNsEmulatorBehavior(
            responseDelay: .milliseconds(delayMilliseconds), maxConcurrentStreams: maxStreams,
            initialMaxConcurrentStreams: initialMaxStreams, goAwayAfterStreams: goAwayAfter,
            dropAfterStreams: dropAfter, connectionWindowSize: connectionWindow)
        let configuration = APNsEmulatorConfiguration(
            host: host, port: port, certificateFile: certificate, privateKeyFile: key,
            authentication: authentication, expectedTopic: topic, threads: threads,
            recordNotifications: false, log: !quiet, behavior: behavior)
        let emulator = try APNsEmulator(configuration: configuration)

        if printNotifications || record != nil {
            let output = try NotificationOutput(printToStandardOutput: printNotifications, recordFile: record)
            emulator.onNotification = { output.write($0.jsonLine) }
        }
        try emulator.start()
        writeAll(1, "listening on \(host):\(emulator.port)\n")

        _ = waitForBlockedSignal([SIGTERM, SIGINT])
        emulator.stop()
        let stats = emulator.statistics
        writeAll(2, "apns-emulator: stopped: received \(stats.received), accepted \(stats.accepted), "
            + "rejected \(stats.rejected), unanswered \(stats.unanswered), reset \(stats.resetStreams), "
            + "dropped connections \(stats.droppedConnections), duplicate apns-ids \(stats.duplicateAPNsIDs), "
            + "connections \(stats.connections), handshake failures \(stats.handshakeFailures)\n")
    }
}

/// Writes JSON lines from any loop thread, one whole line per write(2).
final class NotificationOutput: Sendable {
    private let printToStandardOutput: Bool
    private let recordDescriptor: Int32
    private let lock = Mutex(())

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
        lock.withLock { _ in
            if printToStandardOutput { writeAll(1, text) }
            if recordDescriptor >= 0 { writeAll(recordDescriptor, text) }
        }
    }
}

APNsEmulatorCommand.main()
