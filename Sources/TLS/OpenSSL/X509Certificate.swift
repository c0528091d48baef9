// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: reading a certificate (X509).
import COpenSSL
import Glibc

/// What the relay reads from a certificate (X509*): its subject's UID and
/// common name, and its validity period. Borrows the certificate; frees nothing.
enum X509Certificate {
    /// SHA-256 of the certificate's DER encoding: its fingerprint, as
    /// `openssl x509 -fingerprint -sha256` prints it.
    static func sha256Fingerprint(_ certificate: OpaquePointer) -> [UInt8]? {
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_X509(certificate, &cursor)
        }
        guard written == length else { return nil }
        return MessageDigest.sha256(der)
    }

    static func subjectUID(_ certificate: OpaquePointer) -> String? {
        subjectEntry(certificate, nid: NID_userId)
    }

    static func subjectCommonName(_ certificate: OpaquePointer) -> String? {
        subjectEntry(certificate, nid: NID_commonName)
    }

    private static func subjectEntry(_ certificate: OpaquePointer, nid: Int32) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0,
              let entry = X509_NAME_get_entry(name, index),
              let value = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, value)
        guard length >= 0, let utf8 else { return nil }
        defer { shim_OPENSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// The certificate's notBefore / notAfter as unix seconds.
    static func validity(_ certificate: OpaquePointer) -> (notBefore: Int, notAfter: Int)? {
        guard let notBefore = unixSeconds(X509_get0_notBefore(certificate)),
              let notAfter = unixSeconds(X509_get0_notAfter(certificate))
        else { return nil }
        return (notBefore, notAfter)
    }

    private static func unixSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int? {
        guard let time else { return nil }
        var fields = tm()
        guard ASN1_TIME_to_tm(time, &fields) == 1 else { return nil }
        return Int(timegm(&fields))
    }
}
