// Apple's `apns-push-type` values and the topic each needs ("Sending
// notification requests to APNs", the header table): the bundle id, or the
// bundle id with a suffix for the types a PushKit or extension service
// receives.

public enum APNsPushType {
    /// Every `apns-push-type` Apple documents.
    public static let known: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets", "controls",
    ]

    /// The suffix `apns-topic` carries after the bundle id for each type
    /// that needs one. `mdm`'s topic is the UID of the MDM push
    /// certificate's subject, not a bundle id: no suffix.
    public static let topicSuffixes: [String: String] = [
        "location": ".location-query",
        "voip": ".voip",
        "complication": ".complication",
        "fileprovider": ".pushkit.fileprovider",
        "liveactivity": ".push-type.liveactivity",
        "pushtotalk": ".voip-ptt",
        "widgets": ".push-type.widgets",
        "controls": ".push-type.controls",
    ]

    /// The bundle id a suffixed `topic` stands for: `topic` without the
    /// suffix of `pushType` (without a push type, any of the suffixes, as
    /// APNs infers the type), nil when it has no such suffix.
    public static func bundleID(ofTopic topic: String, pushType: String?) -> String? {
        func strip(_ suffix: String) -> String? {
            guard topic.utf8.count > suffix.utf8.count, topic.hasSuffix(suffix) else { return nil }
            return String(topic.dropLast(suffix.count))
        }
        if let pushType { return topicSuffixes[pushType].flatMap(strip) }
        // Longest first: `.voip-ptt` before `.voip` cannot collide, but a
        // fixed order keeps the answer the same on every run.
        for suffix in topicSuffixes.values.sorted(by: { $0.utf8.count > $1.utf8.count }) {
            if let bundleID = strip(suffix) { return bundleID }
        }
        return nil
    }
}
