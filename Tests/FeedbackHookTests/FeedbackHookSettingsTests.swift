import FeedbackHook
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

@Suite struct FeedbackHookHeadersTests {
    static let valid: [(text: String, headers: [String])] = [
        ("", []),
        ("   ", []),
        ("x-gorush-token:4e989115e09680f44a645519fed6a976", ["x-gorush-token=4e989115e09680f44a645519fed6a976"]),
        ("X-Api-Key: one, Authorization: Bearer abc:def", ["X-Api-Key=one", "Authorization=Bearer abc:def"]),
        ("\tX-A:\t1 ,X-B: two words ", ["X-A=1", "X-B=two words"]),
    ]

    @Test("Comma-separated `Name: value` entries are split at the first colon and trimmed", arguments: valid)
    func parsesEntries(row: (text: String, headers: [String])) throws {
        let headers = try parseFeedbackHookHeaders(row.text)
        #expect(headers.map { "\($0.name)=\($0.value)" } == row.headers)
    }

    static let invalid: [(text: String, message: String)] = [
        ("X-Api-Key", "entry 1 is not `Name: value` (no ':')"),
        ("X-A: 1,,X-B: 2", "entry 2 is empty"),
        ("X-A: 1,", "entry 2 is empty"),
        (": secret", "entry 1: the name is not an HTTP token (RFC 9110 §5.6.2)"),
        ("X Api: secret", "entry 1: the name is not an HTTP token (RFC 9110 §5.6.2)"),
        ("X-Api :secret", "entry 1: the name is not an HTTP token (RFC 9110 §5.6.2)"),
        ("X-Api-Key:", "entry 1 (X-Api-Key): the value is empty"),
        ("X-Api-Key: sec\rret", "entry 1 (X-Api-Key): the value holds a control character (CR, LF…)"),
        ("X-A: 1, X-Api-Key: sec\nX-Evil: ret", "entry 2 (X-Api-Key): the value holds a control character (CR, LF…)"),
        ("X-Api-Key: sec\u{0}ret", "entry 1 (X-Api-Key): the value holds a control character (CR, LF…)"),
        ("content-type: text/plain", "entry 1 (content-type): the hook sets this field itself"),
        ("Host: secret.example", "entry 1 (Host): the hook sets this field itself"),
    ]

    @Test("A malformed entry is refused by position and name, never showing its value", arguments: invalid)
    func refusesMalformedEntries(row: (text: String, message: String)) {
        #expect {
            try parseFeedbackHookHeaders(row.text)
        } throws: { error in
            guard case FeedbackHookError.invalidHeader(let message)? = error as? FeedbackHookError else { return false }
            return message == row.message && !String(describing: error).contains("secret")
                && !String(describing: error).contains("sec")
        }
    }
}
