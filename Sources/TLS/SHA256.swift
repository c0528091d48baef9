/// SHA-256 (FIPS 180-4), for the key hash of a restricted endpoint: a
/// `vapid=` URL carries SHA-256 of the server's VAPID key (WIRE.md §1.3). The
/// digest itself is OpenSSL's (`OpenSSL/MessageDigest.swift`).
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        MessageDigest.sha256(bytes)
    }
}
