/// Every Redis key the fleet uses, in one place, each under the prefix
/// `toot-relay:` so the relay can share a Redis (and a database) with
/// Mastodon's own keys. README "Several instances" lists them for
/// operators.
public enum FleetKeys {
    public static let prefix = "toot-relay:"

    /// A list per app of refused tokens (feedback), newest last, capped at
    /// `FEEDBACK_MAX`.
    public static func feedback(app: String) -> String { prefix + "feedback:" + app }

    /// A hash per instance: the sequence of its last batch written to each
    /// app's feedback list, so that a batch sent again after a lost reply
    /// is written once. Expires a day after the instance's last write.
    public static func feedbackWritten(instance: String) -> String { prefix + "feedback-written:" + instance }

    /// The stream of hook posts waiting, read by every instance in
    /// `consumerGroup`.
    public static let hookStream = prefix + "hook"

    /// The stream of asynchronous notifications, read by every instance in
    /// `consumerGroup`.
    public static let asyncStream = prefix + "async"

    /// The consumer group every instance reads the streams in.
    public static let consumerGroup = "relays"

    /// A hash of pyapns' provisioned apps: app id → its environment and PEM.
    public static let provisionedApps = prefix + "provisioned"

    /// The provider token of one signing key (team and key id), shared so
    /// that every instance sends the same one.
    public static func providerToken(teamID: String, keyID: String) -> String {
        prefix + "provider-token:" + teamID + ":" + keyID
    }

    /// The FCM access token of one service account (`client_email` and
    /// `private_key_id`), shared so that one instance fetches for the fleet.
    public static func fcmAccessToken(clientEmail: String, privateKeyID: String) -> String {
        prefix + "fcm-access-token:" + clientEmail + ":" + privateKeyID
    }
}
