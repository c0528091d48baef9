import FeedbackHook
import Observability
import Testing

@Suite struct FeedbackHookURLTests {
    static let valid: [(text: String, loggable: String)] = [
        ("http://127.0.0.1:8080/hook", "http://127.0.0.1:8080"),
        ("https://example.com/api/hook", "https://example.com"),
        ("HTTPS://Example.com", "https://example.com"),
        ("https://user:secret@hooks.example.com/services/T0/B0/XYZ?token=abc", "https://hooks.example.com"),
        ("http://[::1]:9000/", "http://[::1]:9000"),
    ]

    @Test("An http(s) URL is accepted and logged as scheme, host and port only", arguments: valid)
    func acceptsHTTPURLs(row: (text: String, loggable: String)) throws {
        let url = try parseFeedbackHookURL(row.text)
        #expect(url.text == row.text)
        #expect(url.loggable == row.loggable)
    }

    static let invalid: [String] = [
        "", "example.com/hook", "ftp://example.com/hook", "file:///etc/passwd", "gopher://example.com",
        "http://", "http://exa mple.com/", "https://example.com/\r\nX: y", "not a url",
    ]

    @Test("Anything but an absolute http(s) URL with a host is refused with a clear error", arguments: invalid)
    func refusesOtherURLs(text: String) {
        #expect {
            try parseFeedbackHookURL(text)
        } throws: { error in
            guard case FeedbackHookError.invalidURL(let message)? = error as? FeedbackHookError else { return false }
            return !message.isEmpty && String(describing: error).hasPrefix("FEEDBACK_HOOK_URL: ")
        }
    }
}

/// FEEDBACK_HOOK_HEADERS is read as a list by `Configuration` (its tests
/// hold the list rows); a hook made with headers still checks each one.
@Suite struct FeedbackHookHeadersTests {
    static let invalid: [(name: String, value: String, message: String)] = [
        ("", "secret", "entry 1: the name is not an HTTP token (RFC 9110 §5.6.2)"),
        ("X Api", "secret", "entry 1: the name is not an HTTP token (RFC 9110 §5.6.2)"),
        ("X-Api-Key", "", "entry 1 (X-Api-Key): the value is empty"),
        ("X-Api-Key", "sec\rret", "entry 1 (X-Api-Key): the value holds a control character (CR, LF…)"),
        ("X-Api-Key", "sec\nX-Evil: ret", "entry 1 (X-Api-Key): the value holds a control character (CR, LF…)"),
        ("X-Api-Key", "sec\u{0}ret", "entry 1 (X-Api-Key): the value holds a control character (CR, LF…)"),
        ("content-type", "text/plain", "entry 1 (content-type): the hook sets this field itself"),
        ("Host", "secret.example", "entry 1 (Host): the hook sets this field itself"),
    ]

    @Test("A hook given a malformed header is refused by position and name, never showing its value", arguments: invalid)
    func refusesMalformedHeaders(row: (name: String, value: String, message: String)) {
        #expect {
            try FeedbackHook(url: "http://127.0.0.1:9/hook", headers: [(name: row.name, value: row.value)],
                             queueCapacity: 1, timeout: .seconds(1), maxAttempts: 1, backoff: .zero,
                             logger: Logger(level: .warning) { _ in })
        } throws: { error in
            guard case FeedbackHookError.invalidHeader(let message)? = error as? FeedbackHookError else { return false }
            return message == row.message && !String(describing: error).contains("sec")
        }
    }
}
