// The hook's one error type: what start-up validation and libcurl's set-up
// report. Messages never hold a header's value, the URL's userinfo, path or
// query, or a body: any of them may be a secret.

public enum FeedbackHookError: Error, Equatable, CustomStringConvertible {
    /// `FEEDBACK_HOOK_URL` is not an http(s) URL.
    case invalidURL(String)
    /// An entry of `FEEDBACK_HOOK_HEADERS`.
    case invalidHeader(String)
    /// A numeric setting out of range (queue capacity, attempts, times).
    case invalidSetting(String)
    /// libcurl could not be set up.
    case curl(String)

    public var description: String {
        switch self {
        case .invalidURL(let text): "FEEDBACK_HOOK_URL: \(text)"
        case .invalidHeader(let text): "FEEDBACK_HOOK_HEADERS: \(text)"
        case .invalidSetting(let text): "feedback hook: \(text)"
        case .curl(let text): "feedback hook: \(text)"
        }
    }
}
