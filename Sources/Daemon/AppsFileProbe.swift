import AppsFile
import EventLoop
import Foundation

// Why a child process: the TOML library (TOMLKit 0.6.0, toml++ 3.4.0 inside)
// aborts on some malformed input instead of reporting it. AppsFile refuses
// every such input the fuzzer has found (Fuzz/README.md), but a reload must
// never take the running relay down, and an abort at start-up must read as
// what it is. So the file is parsed once in a child first (this same
// executable, `toot-relay parse-apps-file`); only a file the child parsed is
// parsed in the relay itself.

/// Parses the apps file in a child process: nil when it parses; else the
/// one-line reason (the parser's own error, or that it crashed or hung).
func probeAppsFile(_ path: String, environment: [String: String]) -> String? {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
    child.arguments = ["parse-apps-file", path]
    // No crash report from the child: it would fill the pipe read only at
    // its exit; its status says enough.
    child.environment = environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { _, probe in probe }
    let errors = Pipe()
    child.standardOutput = FileHandle.nullDevice
    child.standardError = errors
    do { try child.run() } catch {
        return "APPS_FILE (\(path)): cannot start the parser check: \(error)"
    }
    // Bounded: the file is at most 1 MiB; a parse takes milliseconds.
    let deadline = Date().addingTimeInterval(10)
    while child.isRunning && Date() < deadline { usleep(2_000) }
    if child.isRunning {
        // SIGKILL: the child inherits the relay's blocked SIGTERM.
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        return "APPS_FILE (\(path)): the TOML parser did not finish within 10 s"
    }
    let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile().prefix(4096), as: UTF8.self)
    switch (child.terminationReason, child.terminationStatus) {
    case (.exit, 0):
        return nil
    case (.exit, _):
        let line = output.split(separator: "\n").first.map(String.init) ?? "the TOML parser check failed"
        return line.hasPrefix("toot-relay: ") ? String(line.dropFirst("toot-relay: ".count)) : line
    case (.uncaughtSignal, let signal):
        return "APPS_FILE (\(path)): the TOML parser crashed on this file (signal \(signal)); "
            + "check its syntax"
    @unknown default:
        return "APPS_FILE (\(path)): the TOML parser check ended unexpectedly"
    }
}

/// The child's side: reads and parses the file (no credentials), exit 0 or
/// 1 with the one-line error on stderr.
public func parseAppsFileInChild(_ path: String, environment: [String: String]) -> Int32 {
    guard let data = FileManager.default.contents(atPath: path) else {
        writeAll(2, "toot-relay: APPS_FILE (\(path)): cannot be read\n")
        return 1
    }
    let text = String(decoding: data.prefix(AppsFileLimits.fileBytes + 1), as: UTF8.self)
    do {
        _ = try AppsFile.parse(text, file: path, environment: environment)
        return 0
    } catch {
        writeAll(2, "toot-relay: \(error.description)\n")
        return 1
    }
}
