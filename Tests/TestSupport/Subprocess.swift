import Foundation

/// Runs an external tool (the `openssl` CLI, scripts) for tests and waits for it.
public enum Subprocess {
    public struct Result: Sendable {
        public let status: Int32
        public let standardOutput: [UInt8]
        public let standardError: [UInt8]
        public var standardOutputText: String { String(decoding: standardOutput, as: UTF8.self) }
        public var standardErrorText: String { String(decoding: standardError, as: UTF8.self) }
    }

    /// Runs `arguments[0]` (an absolute path, or a name looked up through
    /// `/usr/bin/env`) with the remaining arguments. Output goes to temporary
    /// files rather than pipes so a chatty tool can never block on a full pipe.
    public static func run(_ arguments: [String], standardInput: [UInt8] = []) throws -> Result {
        guard let first = arguments.first else {
            throw TestCertificatesError(message: "Subprocess.run needs at least the program name")
        }
        let process = Process()
        if first.hasPrefix("/") {
            process.executableURL = URL(fileURLWithPath: first)
            process.arguments = Array(arguments.dropFirst())
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
        }
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("subprocess-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inputURL = scratch.appendingPathComponent("stdin")
        let outputURL = scratch.appendingPathComponent("stdout")
        let errorURL = scratch.appendingPathComponent("stderr")
        try Data(standardInput).write(to: inputURL)
        try Data().write(to: outputURL)
        try Data().write(to: errorURL)
        let input = try FileHandle(forReadingFrom: inputURL)
        let output = try FileHandle(forWritingTo: outputURL)
        let error = try FileHandle(forWritingTo: errorURL)
        defer {
            try? input.close()
            try? output.close()
            try? error.close()
        }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            standardOutput: [UInt8](try Data(contentsOf: outputURL)),
            standardError: [UInt8](try Data(contentsOf: errorURL)))
    }
}
