// All of the relay's libcurl pointer code (ARCHITECTURE.md §3): an owner
// per curl object (easy handle, multi handle, header list, parsed URL), each
// freeing it in deinit. The variadic setopt/getinfo calls go through the typed
// wrappers of CCurl's shim.h. libcurl, a real HTTP client library, not a
// hand-written one: connection reuse, TLS, timeouts.

import CCurl

/// libcurl's process-wide set-up, done once before the first handle (Swift
/// runs a global's initializer exactly once, on first use).
private let curlGlobalInit: CURLcode = toot_curl_global_init_default()

/// What one POST came to.
enum CurlPostResult: Equatable {
    /// The server answered with this HTTP status.
    case answered(status: Int)
    /// No answer: connect error, timeout, reset… curl's text for its code
    /// (`curl_easy_strerror`: generic, never the URL or the body).
    case transportFailed(String)
    /// Given up because `shouldAbort` said so (the shutdown deadline).
    case aborted
}

/// A `curl_slist` of header lines, owned.
final class CurlHeaderList {
    fileprivate let list: UnsafeMutablePointer<curl_slist>?

    init(lines: [String]) throws(FeedbackHookError) {
        // Built in a local first: an init that throws frees what it made.
        var built: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let extended = curl_slist_append(built, line) else {
                curl_slist_free_all(built)
                throw FeedbackHookError.curl("curl_slist_append failed (out of memory)")
            }
            built = extended
        }
        list = built
    }

    deinit { curl_slist_free_all(list) }
}

/// A multi handle: the connection cache that keeps the hook's connection
/// open between posts, and the one place the worker waits (for work, for a
/// backoff, for a transfer), woken from any thread by `wakeUp`.
final class CurlMulti: @unchecked Sendable {
    // @unchecked: `wakeUp` is the one call made from other threads, and
    // libcurl documents curl_multi_wakeup as callable from any thread; the
    // rest is used by the worker thread only.
    private let handle: UnsafeMutableRawPointer

    init() throws(FeedbackHookError) {
        guard curlGlobalInit == CURLE_OK else {
            throw FeedbackHookError.curl("curl_global_init failed: \(String(cString: curl_easy_strerror(curlGlobalInit)))")
        }
        guard let handle = curl_multi_init() else { throw FeedbackHookError.curl("curl_multi_init failed") }
        self.handle = handle
    }

    deinit { curl_multi_cleanup(handle) }

    /// Makes a `wait` in progress (or the next one) return at once.
    func wakeUp() { _ = curl_multi_wakeup(handle) }

    /// Waits up to `milliseconds` for a transfer's sockets or a `wakeUp`.
    func wait(milliseconds: Int) {
        _ = curl_multi_poll(handle, nil, 0, Int32(clamping: max(0, milliseconds)), nil)
    }

    /// POSTs `body` on `easy` through this multi handle, waiting in slices of
    /// at most `sliceMilliseconds`, and gives up when `shouldAbort` turns true
    /// (checked after each wake-up). The body is not copied: libcurl reads it
    /// from `body`'s storage, which lives until the transfer is done here.
    func post(_ body: [UInt8], on easy: CurlEasy, sliceMilliseconds: () -> Int,
              shouldAbort: () -> Bool) -> CurlPostResult {
        // POSTFIELDS NULL would mean "read the body from a callback": an
        // empty body still needs storage to point at (its size says 0).
        let storage = body.isEmpty ? [0] : body
        return storage.withUnsafeBytes { raw -> CurlPostResult in
            _ = toot_curl_setopt_off_t(easy.handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            _ = toot_curl_setopt_pointer(easy.handle, CURLOPT_POSTFIELDS, raw.baseAddress)
            guard curl_multi_add_handle(handle, easy.handle) == CURLM_OK else {
                return .transportFailed("curl_multi_add_handle failed")
            }
            defer {
                _ = curl_multi_remove_handle(handle, easy.handle)
                // Nothing may point at `body` once this scope ends.
                _ = toot_curl_setopt_pointer(easy.handle, CURLOPT_POSTFIELDS, nil)
            }
            var running: Int32 = 1
            while true {
                guard curl_multi_perform(handle, &running) == CURLM_OK else {
                    return .transportFailed("curl_multi_perform failed")
                }
                if running == 0 { break }
                if shouldAbort() { return .aborted }
                wait(milliseconds: sliceMilliseconds())
                if shouldAbort() { return .aborted }
            }
            return finishedTransfer(easy)
        }
    }

    /// Reads the one finished transfer's result off the multi handle.
    private func finishedTransfer(_ easy: CurlEasy) -> CurlPostResult {
        var code = CURLE_OK
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            if message.pointee.msg == CURLMSG_DONE, message.pointee.easy_handle == easy.handle {
                code = message.pointee.data.result
            }
        }
        guard code == CURLE_OK else { return .transportFailed(String(cString: curl_easy_strerror(code))) }
        var status = 0
        _ = toot_curl_getinfo_long(easy.handle, CURLINFO_RESPONSE_CODE, &status)
        return .answered(status: status)
    }
}

/// An easy handle set up once for every post to the hook: URL, headers,
/// timeouts, http(s) only, no redirects, the answer's body discarded.
final class CurlEasy {
    fileprivate let handle: UnsafeMutableRawPointer
    /// libcurl keeps a pointer to the list, so it lives as long as the handle.
    private let headers: CurlHeaderList

    init(url: String, headerLines: [String], timeoutMilliseconds: Int) throws(FeedbackHookError) {
        // Set up on locals and stored only when complete: a throw frees
        // the handle here, and deinit never sees a half-made one.
        guard let handle = curl_easy_init() else { throw FeedbackHookError.curl("curl_easy_init failed") }
        let headers: CurlHeaderList
        do {
            headers = try CurlHeaderList(lines: headerLines)
        } catch {
            curl_easy_cleanup(handle)
            throw error
        }
        let timeout = max(1, timeoutMilliseconds)
        let settings: [(String, CURLcode)] = [
            ("URL", toot_curl_setopt_string(handle, CURLOPT_URL, url)),
            ("HTTPHEADER", toot_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers.list)),
            ("POST", toot_curl_setopt_long(handle, CURLOPT_POST, 1)),
            // Threads: no SIGALRM for DNS timeouts (libcurl's advice for
            // multi-threaded programs).
            ("NOSIGNAL", toot_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)),
            ("TIMEOUT_MS", toot_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeout)),
            ("CONNECTTIMEOUT_MS", toot_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, timeout)),
            // http and https only, and no redirects: a redirect would carry
            // the configured (secret) headers to another place.
            ("PROTOCOLS_STR", toot_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")),
            ("FOLLOWLOCATION", toot_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)),
            ("USERAGENT", toot_curl_setopt_string(handle, CURLOPT_USERAGENT, "toot-relay")),
            ("TCP_KEEPALIVE", toot_curl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1)),
            // The hook's answer body is not read; without a write function
            // libcurl would print it to stdout.
            ("WRITEFUNCTION", toot_curl_setopt_write_function(handle) { _, size, count, _ in size * count }),
        ]
        if let failed = settings.first(where: { $0.1 != CURLE_OK }) {
            curl_easy_cleanup(handle)
            throw FeedbackHookError.curl("curl_easy_setopt \(failed.0) failed: \(String(cString: curl_easy_strerror(failed.1)))")
        }
        self.handle = handle
        self.headers = headers
    }

    deinit { curl_easy_cleanup(handle) }
}

/// The parts of a URL as libcurl itself parses it (the same parser that
/// will send to it), for validating the hook's URL and naming it in logs.
struct CurlURLParts {
    var scheme: String
    var host: String
    var port: String?
    var hasUserInfo: Bool
}

/// Parses `text` with libcurl's URL API (curl_url); nil with libcurl's
/// reason when it is not a URL libcurl accepts.
func curlURLParts(_ text: String) -> Result<CurlURLParts, FeedbackHookError> {
    guard curlGlobalInit == CURLE_OK, let url = curl_url() else {
        return .failure(.curl("curl_url failed"))
    }
    defer { curl_url_cleanup(url) }
    // Non-ASCII and spaces are refused by default: the text must already be
    // a URL, not something libcurl would have to guess at.
    let code = curl_url_set(url, CURLUPART_URL, text, 0)
    guard code == CURLUE_OK else {
        return .failure(.invalidURL("not a URL libcurl accepts: \(String(cString: curl_url_strerror(code)))"))
    }
    func part(_ which: CURLUPart) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(url, which, &value, 0) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
    return .success(CurlURLParts(
        scheme: part(CURLUPART_SCHEME) ?? "", host: part(CURLUPART_HOST) ?? "", port: part(CURLUPART_PORT),
        hasUserInfo: part(CURLUPART_USER) != nil))
}
