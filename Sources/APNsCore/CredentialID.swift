// Which of the relay's APNs credentials sends a notification: the APNs
// client keeps its connections per credential.

/// One loaded APNs credential (a certificate or a token key), by a number
/// the process gives it: apps that share a credential share its id, and so
/// its APNs connections (several topics on one connection is what token
/// auth allows). A credential changed by a reload gets a new id; an id is
/// never reused.
public struct CredentialID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: Int
    public init(_ rawValue: Int) { self.rawValue = rawValue }
    /// The credential of a relay with one app (and of tests).
    public static let primary = CredentialID(0)
    public static func < (a: CredentialID, b: CredentialID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "credential \(rawValue)" }
}
