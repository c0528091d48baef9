// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: TLS contexts (SSL_CTX).
import COpenSSL

/// Making and configuring an SSL_CTX: TLS 1.2 or later, the identity, peer
/// verification, ALPN. The SSL_CTX* is its caller's (TLSContext), given back
/// to `free`.
enum SSLContext {
    /// The context, and the server's ALPN list, which must outlive it.
    static func make(
        server: Bool, identity: X509Identity?, alpn: [String], verifyFile: String?, requireClientCertificate: Bool
    ) throws(TLSError) -> (context: OpaquePointer, alpnList: ALPNProtocolList?) {
        ERR_clear_error()
        let wire = try ALPNProtocolList.wireFormat(alpn)
        guard let context = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError(.configuration, "SSL_CTX_new: " + OpenSSLErrorQueue.takeLine(fallback: "out of memory"))
        }
        do throws(TLSError) {
            let alpnList = try configure(context, server: server, identity: identity, wire: wire, verifyFile: verifyFile,
                                         requireClientCertificate: requireClientCertificate)
            return (context, alpnList)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
    }

    static func free(_ context: OpaquePointer) { SSL_CTX_free(context) }

    private static func configure(
        _ context: OpaquePointer, server: Bool, identity: X509Identity?, wire: [UInt8], verifyFile: String?,
        requireClientCertificate: Bool
    ) throws(TLSError) -> ALPNProtocolList? {
        guard shim_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw TLSError(.configuration, "cannot require TLS 1.2: " + OpenSSLErrorQueue.takeLine(fallback: "refused"))
        }
        // Partial writes let a non-blocking caller keep its own buffer;
        // moving-buffer allows retrying from a different address. A server
        // (thousands of mostly idle senders) also releases its ~34 KiB of
        // read/write buffers whenever a connection goes quiet; a client (a
        // few busy APNs connections) keeps them, or it would free and
        // allocate them again after every burst.
        var mode = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
        if server { mode |= SSL_MODE_RELEASE_BUFFERS }
        _ = shim_SSL_CTX_set_mode(context, Int(mode))
        // Renegotiation (TLS 1.2 only) is never needed here and has a history of attacks.
        _ = SSL_CTX_set_options(context, shim_SSL_OP_NO_RENEGOTIATION())

        if let identity {
            guard SSL_CTX_use_certificate(context, identity.certificate) == 1,
                  SSL_CTX_use_PrivateKey(context, identity.key) == 1,
                  shim_SSL_CTX_set1_chain(context, identity.chain) == 1,
                  SSL_CTX_check_private_key(context) == 1
            else {
                throw TLSError(.configuration, "cannot use the identity: " + OpenSSLErrorQueue.takeLine(fallback: "refused"))
            }
        }

        if server {
            if let verifyFile {
                guard SSL_CTX_load_verify_locations(context, verifyFile, nil) == 1 else {
                    throw TLSError(.configuration, "cannot load client CA file \(verifyFile): " + OpenSSLErrorQueue.takeLine(fallback: "unreadable"))
                }
                // Names sent in CertificateRequest so clients pick a matching certificate.
                if let names = SSL_load_client_CA_file(verifyFile) {
                    SSL_CTX_set_client_CA_list(context, names)
                }
                ERR_clear_error()
                // SSL_VERIFY_PEER alone sends CertificateRequest and fails the
                // handshake on a certificate that does not verify, but lets a
                // client send none; FAIL_IF_NO_PEER_CERT refuses that too.
                let mode = requireClientCertificate ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER
                SSL_CTX_set_verify(context, mode, nil)
            } else {
                SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            }
            guard !wire.isEmpty else { return nil }
            let list = ALPNProtocolList(wire)
            SSL_CTX_set_alpn_select_cb(context, ALPNProtocolList.select, Unmanaged.passUnretained(list).toOpaque())
            return list
        }
        if let verifyFile {
            guard SSL_CTX_load_verify_locations(context, verifyFile, nil) == 1 else {
                throw TLSError(.configuration, "cannot load trusted roots file \(verifyFile): " + OpenSSLErrorQueue.takeLine(fallback: "unreadable"))
            }
        } else {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw TLSError(.configuration, "cannot load the system's trusted roots: " + OpenSSLErrorQueue.takeLine(fallback: "unavailable"))
            }
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if !wire.isEmpty {
            // Inverted convention: 0 is success.
            guard SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0 else {
                throw TLSError(.configuration, "cannot set ALPN: " + OpenSSLErrorQueue.takeLine(fallback: "refused"))
            }
        }
        return nil
    }
}
