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
/* Tests only (Tests/TLSTests/OpenSSLTestHooks.swift): the TLS 1.2 cap. */
static inline long shim_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long shim_SSL_CTX_set1_chain(SSL_CTX *ctx, STACK_OF(X509) *chain) {
    return SSL_CTX_set1_chain(ctx, chain);
}
static inline uint64_t shim_SSL_OP_NO_RENEGOTIATION(void) {
    return SSL_OP_NO_RENEGOTIATION;
}
/* Tests only (Tests/TLSTests/OpenSSLTestHooks.swift): the chain length. */
static inline int shim_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}
static inline STACK_OF(X509) *shim_sk_X509_new_null(void) {
    return sk_X509_new_null();
}
/* Takes ownership of certificate on success (returns the new count, 0 on failure). */
static inline int shim_sk_X509_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}
/* Frees the stack and every certificate in it. */
static inline void shim_sk_X509_pop_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}
static inline void shim_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}
static inline int shim_ERR_R_UNSUPPORTED(void) {
    return ERR_R_UNSUPPORTED;
}
/* EVP_PKEY_fromdata's selection for domain parameters alone (P-256's
   group): a macro of macros, which Swift does not import. */
static inline int shim_EVP_PKEY_KEY_PARAMETERS(void) {
    return EVP_PKEY_KEY_PARAMETERS;
}
#endif
