#ifndef TOOT_RELAY_COPENSSL_SHIM_H
#define TOOT_RELAY_COPENSSL_SHIM_H
// OpenSSL 3.0 (Debian 12). Several public calls are macros, which Swift
// cannot import; each one the project needs is wrapped here as a
// static inline function named shim_<macro>.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/bio.h>
#include <openssl/provider.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>

static inline long shim_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long shim_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline long shim_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
#endif
