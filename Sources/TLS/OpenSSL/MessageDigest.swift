// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: one-shot digests (EVP_MD).
import COpenSSL

/// One-shot message digests through EVP_Digest (OpenSSL 3.0).
enum MessageDigest {
    /// SHA-256 (FIPS 180-4) of `bytes`, 32 bytes. EVP_Digest only fails when
    /// OpenSSL cannot allocate or the default provider is missing; a process
    /// without SHA-256 can neither speak TLS nor check a VAPID key, so that
    /// is a fatal error, not an answer to a sender.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let done = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
        }
        guard done == 1, length == 32 else {
            fatalError("OpenSSL cannot compute SHA-256: \(OpenSSLErrorQueue.takeLine(fallback: "EVP_Digest failed"))")
        }
        return Array(digest.prefix(32))
    }
}
