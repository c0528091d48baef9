import APNsCore

/// One provisioned app as the fleet keeps it in Redis (a field of
/// `FleetKeys.provisionedApps`, the app id its name): the environment, a
/// newline, then the PEM text as it was provisioned (certificate and private
/// key). A line of text rather than JSON: the PEM needs no escaping after
/// the first newline, and the decoder stays a few lines.
///
/// A value read back may have been written by anyone who can write to the
/// Redis: `decode` takes nothing on trust, and its failures never quote the
/// value (it holds a private key).
public struct ProvisionedAppRecord: Equatable, Sendable {
    public var environment: APNsEnvironment
    public var pem: [UInt8]

    /// Far above a certificate with its key (about 5 KiB); bounds what one
    /// value read back makes the relay parse.
    public static let maximumBytes = 64 * 1024

    public init(environment: APNsEnvironment, pem: [UInt8]) {
        self.environment = environment
        self.pem = pem
    }

    public var encoded: [UInt8] { Array(environment.rawValue.utf8) + [UInt8(ascii: "\n")] + pem }

    /// Why a value read back is not a record (a log line's words).
    public enum DecodeFailure: Error, Equatable, Sendable, CustomStringConvertible {
        case tooLarge(Int)
        case noEnvironment
        case unknownEnvironment
        case noPEM

        public var description: String {
            switch self {
            case .tooLarge(let bytes): "\(bytes) bytes, more than \(ProvisionedAppRecord.maximumBytes)"
            case .noEnvironment: "no environment line"
            case .unknownEnvironment: "the environment is neither production nor development"
            case .noPEM: "no PEM after the environment"
            }
        }
    }

    public static func decode(_ bytes: [UInt8]) -> Result<ProvisionedAppRecord, DecodeFailure> {
        guard bytes.count <= maximumBytes else { return .failure(.tooLarge(bytes.count)) }
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return .failure(.noEnvironment) }
        guard let environment = APNsEnvironment(rawValue: String(decoding: bytes[..<newline], as: UTF8.self)) else {
            return .failure(.unknownEnvironment)
        }
        let pem = Array(bytes[(newline + 1)...])
        guard !pem.isEmpty else { return .failure(.noPEM) }
        return .success(ProvisionedAppRecord(environment: environment, pem: pem))
    }
}
