import FCMCore

/// How one token request ended, as the fetch reports it.
public enum TokenFetchResult: Sendable, Equatable {
    /// The endpoint answered: its status, its body, and its `Retry-After`
    /// as delay-seconds when it sent one.
    case answered(status: Int, body: [UInt8], retryAfterSeconds: Int?)
    /// No answer: no connection, TLS failed, none in time. One line, no
    /// part of the request (the assertion is a credential).
    case failed(String)
    /// No request: the fleet's token (`FCMAccessTokenSharing`), another
    /// instance's fetch, sent until `keptUntil` (unix seconds).
    case shared(token: String, keptUntil: Int)
}

/// Posts a token request: `body` (form-encoded, `ServiceAccountAssertion`'s
/// content type) to `endpoint` over HTTPS, bounded by a timeout of its own.
/// Called on the access tokens' event loop; `completion` runs exactly once,
/// on that loop.
public typealias TokenFetch = (_ endpoint: OAuthTokenEndpoint, _ body: [UInt8],
                               _ completion: @escaping (TokenFetchResult) -> Void) -> Void
