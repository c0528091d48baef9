import Foundation
import Glibc
import Testing
import TestSupport
import APNsEmulator

/// The `apns-emulator` executable (Sources/apns-emulator/main.swift), run as
/// a scripts would: port 0, read the first stdout line, SIGTERM at the end.
@Suite("apns-emulator executable", .timeLimit(.minutes(1)))
struct ExecutableTests {
    /// Built next to the test bundle by `swift build --build-tests` / `swift test`.
    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("apns-emulator").path
    }

    /// Reads one line from `descriptor` within `timeout` (nil on EOF or timeout).
    static func readLine(_ descriptor: Int32, timeout: Duration = .seconds(10)) -> String? {
        let deadline = ContinuousClock.now + timeout
        var line: [UInt8] = []
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(descriptor, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    /// A started `apns-emulator` with the test server certificate and
    /// `arguments`; killed by `deinit` if a test ends early.
    final class Running {
        let process = Process()
        let output = Pipe()
        let errors = Pipe()
        /// The first stdout line.
        let firstLine: String
        let port: UInt16

        init(_ arguments: [String]) throws {
            let executable = ExecutableTests.executable
            try #require(FileManager.default.isExecutableFile(atPath: executable),
                         "build the package first: \(executable)")
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "--certificate", try TestCertificates.path(TestCertificates.serverCertificate),
                "--key", try TestCertificates.path(TestCertificates.serverKey),
            ] + arguments
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            firstLine = try #require(ExecutableTests.readLine(output.fileHandleForReading.fileDescriptor))
            port = try #require(UInt16(firstLine.split(separator: ":").last ?? ""))
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }

        /// The next stdout line (a `--print` JSON line).
        func nextLine() -> String? {
            ExecutableTests.readLine(output.fileHandleForReading.fileDescriptor)
        }

        /// SIGTERM, then the exit status (nil: still running after 10 s) and stderr.
        func terminate() -> (status: Int32?, standardError: String) {
            kill(process.processIdentifier, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
            guard !process.isRunning else { return (nil, "") }
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, text)
        }
    }

    @Test("prints its port, prints and records each notification as a JSON line, exits 0 with stats on SIGTERM")
    func runsAsAScriptWould() throws {
        let record = FileManager.default.temporaryDirectory.appendingPathComponent("record-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: record) }
        let emulator = try Running([
            "--client-ca", try TestCertificates.path(TestCertificates.caCertificate),
            "--topic", Fixture.topic, "--print", "--record", record.path, "--quiet",
        ])
        #expect(emulator.firstLine.hasPrefix("listening on 127.0.0.1:"))

        let accepted = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())",
                                        headers: ["apns-topic: \(Fixture.topic)"])
        #expect(accepted.status == 200)
        let fault = try Curl.request(port: emulator.port, path: "/3/device/\(APNsFaultToken.token(code: 1))")
        #expect(fault.status == 410)

        let printed = try #require(emulator.nextLine())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any])
        #expect(object["token"] as? String == Fixture.token())
        #expect(object["topic"] as? String == Fixture.topic)
        #expect(object["payload"] as? String == String(decoding: Fixture.payload, as: UTF8.self))
        let recorded = try String(contentsOf: record, encoding: .utf8)
        #expect(recorded == printed + "\n")

        let (status, stderr) = emulator.terminate()
        #expect(status == 0)
        #expect(stderr.contains("accepted 1, rejected 1"), "\(stderr)")
    }

    @Test("--drop-after 1 closes the connection on the first request, unanswered, and counts it")
    func dropAfterFlag() throws {
        let emulator = try Running([
            "--client-ca", try TestCertificates.path(TestCertificates.caCertificate),
            "--drop-after", "1", "--goaway-after", "5", "--quiet",
        ])
        let dropped = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())",
                                       headers: ["apns-topic: \(Fixture.topic)"])
        #expect(dropped.status != 200)

        let (status, stderr) = emulator.terminate()
        #expect(status == 0)
        #expect(stderr.contains("accepted 0,"), "\(stderr)")
        #expect(stderr.contains("dropped connections 1,"), "\(stderr)")
    }

    @Test("refuses --goaway-after 0 and --drop-after 0 with a usage error", arguments: ["--goaway-after", "--drop-after"])
    func countFlagsMustBePositive(flag: String) throws {
        let executable = Self.executable
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try Subprocess.run([executable, "--certificate", "c", "--key", "k", "--no-client-auth", flag, "0"])
        #expect(result.status != 0)
        #expect(result.standardErrorText.contains("at least 1"))
    }

    @Test("refuses contradictory authentication flags with a usage error")
    func usageErrors() throws {
        let executable = Self.executable
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try Subprocess.run([executable, "--certificate", "c", "--key", "k", "--no-client-auth",
                                         "--client-ca", "ca.pem"])
        #expect(result.status != 0)
        #expect(result.standardErrorText.contains("--no-client-auth checks no credentials"))
        let none = try Subprocess.run([executable, "--certificate", "c", "--key", "k"])
        #expect(none.status != 0)
        #expect(none.standardErrorText.contains("choose --client-ca"))
        let missing = try Subprocess.run([executable, "--certificate", "/nonexistent", "--key", "/nonexistent",
                                          "--no-client-auth"])
        #expect(missing.status != 0)
        #expect(missing.standardErrorText.contains("/nonexistent"))
    }

    @Test("--token-key and repeated --provider-key serve several keys; --environment development refuses production-only keys")
    func severalProviderKeys() throws {
        let sandbox = TestKeys.sandbox
        let production = TestKeys.otherTeam
        let emulator = try Running([
            "--token-key", try TestCertificates.path(TestCertificates.authKeyPublic),
            "--key-id", Fixture.keyID, "--team-id", Fixture.teamID,
            "--provider-key", "key-id=\(sandbox.keyID),team-id=\(sandbox.teamID),"
                + "public-key=\(try TestKeys.path(sandbox.publicFile)),environment=development",
            "--provider-key", "key-id=\(production.keyID),team-id=\(production.teamID),"
                + "public-key=\(try TestKeys.path(production.publicFile)),environment=production",
            "--environment", "development", "--print", "--quiet",
        ])
        for (key, status, reason) in [(sandbox, 200, nil), (TestKeys.team, 200, nil),
                                      (production, 403, "BadEnvironmentKeyInToken")] {
            let result = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())", headers: [
                "apns-topic: \(Fixture.topic)", "authorization: bearer \(try key.token())",
            ], clientCertificate: nil)
            #expect(result.status == status, "\(key.keyID): \(result.body) \(result.standardError)")
            #expect(result.reason == reason)
            if status == 200 {
                let printed = try #require(emulator.nextLine())
                let object = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any])
                #expect(object["key_id"] as? String == key.keyID)
                #expect(object["authenticated_as"] as? String == key.teamID)
            }
        }
        let (status, stderr) = emulator.terminate()
        #expect(status == 0)
        #expect(stderr.contains("accepted 2, rejected 1"), "\(stderr)")
    }

    @Test("--token-update-interval: a key's new token sooner than that is 429 TooManyProviderTokenUpdates; --help tells")
    func tokenUpdateIntervalFlag() throws {
        let emulator = try Running([
            "--token-key", try TestCertificates.path(TestCertificates.authKeyPublic),
            "--key-id", Fixture.keyID, "--team-id", Fixture.teamID, "--token-update-interval", "1200",
        ])
        let now = Int(time(nil))
        var answers: [(Int, String?)] = []
        for issuedAt in [now - 120, now, now - 120] {
            let result = try Curl.request(port: emulator.port, path: "/3/device/\(Fixture.token())", headers: [
                "apns-topic: \(Fixture.topic)", "authorization: bearer \(try TestKeys.team.token(issuedAt: issuedAt))",
            ], clientCertificate: nil)
            answers.append((result.status, result.reason))
        }
        #expect(answers.map(\.0) == [200, 429, 200])
        #expect(answers.map(\.1) == [nil, "TooManyProviderTokenUpdates", nil])
        let (status, stderr) = emulator.terminate()
        #expect(status == 0)
        #expect(stderr.contains("a key's new token at most every 1200 s"), "\(stderr)")
        #expect(stderr.contains("accepted 2, rejected 1"), "\(stderr)")

        let help = try Subprocess.run([Self.executable, "--help"])
        #expect(help.standardOutputText.contains("--token-update-interval <seconds>"))
        #expect(help.standardOutputText.contains("UnrelatedKeyIdInToken"))
        let negative = try Subprocess.run([Self.executable, "--certificate", "c", "--key", "k", "--no-client-auth",
                                           "--token-update-interval=-5"])
        #expect(negative.status != 0)
        #expect(negative.standardErrorText.contains("--token-update-interval must not be negative"))
    }

    @Test("--client-ca with --token-key and --provider-key: certificate clients and token clients on one emulator")
    func certificatesAndTokens() throws {
        let topicKey = TestKeys.topicKey
        let emulator = try Running([
            "--client-ca", try TestKeys.path(TestKeys.twoCAs),
            "--token-key", try TestCertificates.path(TestCertificates.authKeyPublic),
            "--key-id", Fixture.keyID, "--team-id", Fixture.teamID,
            "--provider-key", "key-id=\(topicKey.keyID),team-id=\(topicKey.teamID),"
                + "public-key=\(try TestKeys.path(topicKey.publicFile)),topic=\(TestKeys.secondTopic)",
            "--print", "--quiet",
        ])
        let path = "/3/device/\(Fixture.token())"
        let byCertificate = try Curl.request(port: emulator.port, path: path, headers: [
            "apns-topic: \(TestKeys.secondTopic)",
        ], clientCertificate: (TestKeys.secondClientCertificate, TestKeys.secondClientKey))
        #expect(byCertificate.status == 200, "\(byCertificate.standardError)")
        let byToken = try Curl.request(port: emulator.port, path: path, headers: [
            "apns-topic: \(TestKeys.secondTopic)", "authorization: bearer \(try topicKey.token())",
        ], clientCertificate: nil)
        #expect(byToken.status == 200, "\(byToken.standardError)")
        let tokenless = try Curl.request(port: emulator.port, path: path, headers: ["apns-topic: \(Fixture.topic)"],
                                         clientCertificate: nil)
        #expect(tokenless.status == 403)
        #expect(tokenless.reason == "MissingProviderToken")

        var lines: [[String: Any]] = []
        for _ in 0..<2 {
            let printed = try #require(emulator.nextLine())
            lines.append(try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any]))
        }
        #expect(lines[0]["authenticated_as"] as? String == TestKeys.secondTopic)
        #expect(lines[0]["key_id"] == nil)
        #expect(lines[1]["authenticated_as"] as? String == topicKey.teamID)
        #expect(lines[1]["key_id"] as? String == topicKey.keyID)
        let (status, stderr) = emulator.terminate()
        #expect(status == 0)
        #expect(stderr.contains("accepted 2, rejected 1"), "\(stderr)")
    }

    struct KeyUsageCase: CustomTestStringConvertible, Sendable {
        var name: String
        var arguments: [String]
        var message: String
        var testDescription: String { name }
    }

    /// One case a line: what is wrong | the arguments, split at spaces (`PEM`,
    /// `P384` and `NOTPEM` stand for files the tests make) | part of the error.
    static let keyUsageTable = """
        a --provider-key that is not name=value fields | --provider-key KEY:TEAM:PEM | "KEY:TEAM:PEM" is not name=value
        a --provider-key without its team | --provider-key key-id=K,public-key=PEM | key-id, team-id and public-key are required
        a --provider-key with a malformed environment scope | --provider-key key-id=K,team-id=T,public-key=PEM,environment=staging | environment must be production or development, not "staging"
        a --provider-key whose file cannot be read | --provider-key key-id=K,team-id=T,public-key=/nonexistent/k.pem | provider key K: cannot read /nonexistent/k.pem
        a --token-key whose file cannot be read | --token-key /nonexistent/t.pem --key-id K --team-id T | provider key K: cannot read /nonexistent/t.pem
        a --provider-key that is not P-256 | --provider-key key-id=K,team-id=T,public-key=P384 | provider key K: unsupported key: ES256 needs an EC P-256 key
        a --provider-key file that is not PEM | --provider-key key-id=K,team-id=T,public-key=NOTPEM | provider key K: invalid PEM
        one key id in two --provider-key options | --provider-key key-id=K,team-id=T,public-key=PEM --provider-key key-id=K,team-id=U,public-key=PEM | provider key id K is given twice
        an --environment that is neither production nor development | --no-client-auth --environment sandbox | --environment must be production or development, not "sandbox"
        --key-id without --token-key | --provider-key key-id=K,team-id=T,public-key=PEM --key-id K | --key-id and --team-id belong to --token-key
        --provider-key with --no-client-auth | --provider-key key-id=K,team-id=T,public-key=PEM --no-client-auth | it cannot be combined with --client-ca, --token-key or --provider-key
        """

    static let keyUsageCases = keyUsageTable.split(separator: "\n").map { line in
        let fields = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        return KeyUsageCase(name: fields[0], arguments: fields[1].split(separator: " ").map(String.init),
                            message: fields[2])
    }

    @Test("refuses bad provider keys and environments with an error that names them", arguments: keyUsageCases)
    func keyUsageErrors(_ usage: KeyUsageCase) throws {
        let executable = Self.executable
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let files = ["PEM": try TestCertificates.path(TestCertificates.authKeyPublic),
                     "P384": try TestKeys.path(TestKeys.p384Public), "NOTPEM": try TestKeys.path(TestKeys.notAKey)]
        let arguments = usage.arguments.map { argument in
            files.reduce(argument) { text, file in text.replacingOccurrences(of: "=" + file.key, with: "=" + file.value) }
        }
        let result = try Subprocess.run([
            executable, "--certificate", try TestCertificates.path(TestCertificates.serverCertificate),
            "--key", try TestCertificates.path(TestCertificates.serverKey), "--quiet",
        ] + arguments)
        #expect(result.status != 0)
        #expect(result.standardErrorText.contains(usage.message), "\(result.standardErrorText)")
        #expect(result.standardOutputText.isEmpty, "it must not start listening")
    }
}
