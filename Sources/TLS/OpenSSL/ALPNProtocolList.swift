// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: ALPN lists and the server's choice.
import COpenSSL

/// The server's ALPN list (RFC 7301), at a stable address for as long as
/// the SSL_CTX lives: SSL_select_next_proto may point into it. The context's
/// Swift owner (TLSContext) keeps it alive.
final class ALPNProtocolList {
    let bytes: UnsafeMutableBufferPointer<UInt8>

    init(_ wire: [UInt8]) {
        bytes = .allocate(capacity: max(wire.count, 1))
        _ = bytes.initialize(from: wire)
    }

    deinit { bytes.deallocate() }

    /// ALPN protocol list in wire format (RFC 7301 §3.1: length-prefixed
    /// strings of 1...255 bytes).
    static func wireFormat(_ protocols: [String]) throws(TLSError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError(.configuration, "ALPN protocol names must be 1 to 255 bytes long, got \(bytes.count)")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        return wire
    }

    /// Server-side ALPN selection (RFC 7301 §3.2): the first of the server's
    /// protocols the client also offers. No overlap is a fatal
    /// no_application_protocol alert, as RFC 7301 §3.2 prescribes. The
    /// callback's argument is the context's ALPNProtocolList, unretained.
    static let select: @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outLength, offered, offeredLength, argument in
        guard let out, let outLength, let offered, let argument else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        let list = Unmanaged<ALPNProtocolList>.fromOpaque(argument).takeUnretainedValue()
        guard let server = list.bytes.baseAddress else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        var selected: UnsafeMutablePointer<UInt8>? = nil
        var selectedLength: UInt8 = 0
        let outcome = SSL_select_next_proto(&selected, &selectedLength, server, UInt32(list.bytes.count), offered, offeredLength)
        guard outcome == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        out.pointee = UnsafePointer(selected)
        outLength.pointee = selectedLength
        return SSL_TLSEXT_ERR_OK
    }
}
