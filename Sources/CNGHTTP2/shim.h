#ifndef TOOT_RELAY_CNGHTTP2_SHIM_H
#define TOOT_RELAY_CNGHTTP2_SHIM_H
// nghttp2 1.52 (Debian 12). Only the pre-1.60 API (mem_recv/mem_send,
// ssize_t callbacks) is available; the *2 / nghttp2_ssize API is newer.
#include <nghttp2/nghttp2.h>
#endif
