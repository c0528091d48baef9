import EventLoop
import TLS

/// Errors of the emulator's own setup.
public enum APNsEmulatorError: Error, Sendable, CustomStringConvertible {
    case credentials(CredentialError)
    /// A provider key that cannot be used (unreadable, not EC P-256).
    case providerKey(keyID: String, CredentialError)
    case tls(TLSError)
    case socket(SocketError)
    case eventLoop(EventLoopError)
    case invalidConfiguration(String)
    case alreadyStarted

    public var description: String {
        switch self {
        case .credentials(let error): "APNs emulator credentials: \(error)"
        case .providerKey(let keyID, let error): "APNs emulator provider key \(keyID): \(error)"
        case .tls(let error): "APNs emulator TLS: \(error)"
        case .socket(let error): "APNs emulator listener: \(error)"
        case .eventLoop(let error): "APNs emulator: \(error)"
        case .invalidConfiguration(let reason): "APNs emulator configuration: \(reason)"
        case .alreadyStarted: "APNs emulator already started"
        }
    }
}
