/// What an apps file may hold at most: a hostile or broken file is an error
/// naming the limit, never a crash, a hang or unbounded memory (as
/// the fuzz target `apps-file` checks it).
public enum AppsFileLimits {
    /// The file's size in UTF-8 bytes, checked before it is parsed. A
    /// thousand apps with a p8 key each are about 400 KiB.
    public static let fileBytes = 1 << 20
    /// `[[app]]` tables.
    public static let apps = 1000
    /// `[[api-key]]` tables: each request's key is compared with every key
    /// (`APIKeyring.authorize`), so their number bounds that work.
    public static let apiKeys = 1000
    /// One string value, before and after `${NAME}` expansion: a PEM key
    /// or a base64 PKCS#12 is a few KiB.
    public static let stringBytes = 64 << 10
    /// `alert` and `alert-loc-key`: the alert travels in every payload and
    /// counts against APNs' 4,096 bytes (WIRE.md §1.2: a payload that
    /// does not fit is 413, and Mastodon deletes a subscription on 413).
    public static let alertBytes = 256
}
