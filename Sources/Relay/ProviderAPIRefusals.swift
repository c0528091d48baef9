import HTTPCore
import ProviderAPI

extension HTTP1Refusals {
    /// The provider API's dialect: gorush's `{"code":…,"message":…}` as
    /// application/json (gorush router/server.go, `abortWithError`), so an
    /// API client reads a refusal of its connection (a body over
    /// `API_MAX_BODY_BYTES`, bad framing, a slow head) like any other error.
    public static let gorushJSON = HTTP1Refusals { status, reason in
        HTTP1Response(status: status, headers: jsonHeaders, body: encodeGorushError(status: status, message: reason))
    }
}
