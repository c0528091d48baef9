#ifndef TOOT_RELAY_CCURL_SHIM_H
#define TOOT_RELAY_CCURL_SHIM_H
// libcurl 7.88 (Debian 12, the OpenSSL flavour). curl_easy_setopt and
// curl_easy_getinfo are variadic macros-over-functions that Swift cannot
// call: each argument type the relay passes gets a typed inline wrapper.
#include <curl/curl.h>

typedef size_t (*toot_curl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode toot_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode toot_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// String options: libcurl copies the text (since 7.17).
static inline CURLcode toot_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// CURLOPT_POSTFIELDS: not copied, the caller keeps the bytes alive.
static inline CURLcode toot_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode toot_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode toot_curl_setopt_write_function(CURL *handle, toot_curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

/// curl_global_init's flags are macros built from other macros.
static inline CURLcode toot_curl_global_init_default(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}

static inline CURLcode toot_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

#endif
