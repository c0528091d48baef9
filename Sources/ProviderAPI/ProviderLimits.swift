// What one provider API request may hold (notifications per
// request, tokens per request, body size — all configurable). No defaults
// here: they live in Configuration, with the other variables.

/// The limits of one `/api/push` request.
public struct ProviderLimits: Sendable, Equatable {
    /// The largest body accepted, in bytes; checked before any parsing.
    public var maxBodyBytes: Int
    /// The most notifications in one request (gorush's `max_notification`).
    public var maxNotifications: Int
    /// The most device tokens in one request, summed over its notifications.
    public var maxTokens: Int

    public init(maxBodyBytes: Int, maxNotifications: Int, maxTokens: Int) {
        (self.maxBodyBytes, self.maxNotifications, self.maxTokens) = (maxBodyBytes, maxNotifications, maxTokens)
    }
}
