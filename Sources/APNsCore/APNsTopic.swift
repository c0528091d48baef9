// The `apns-topic` a push type needs. Apple's header table ("Sending
// notification requests to APNs", `apns-push-type`) has the app's bundle id
// as the topic of `alert` and `background`, the MDM certificate's UID for
// `mdm`, and the bundle id with a suffix for the other push types, which
// the notification's topic "must use".

/// Every `apns-push-type` Apple documents.
public let apnsPushTypes: Set<String> = [
    "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
    "pushtotalk", "widgets", "controls",
]

/// The push types whose topic is the bundle id with a suffix, and the
/// suffix.
let apnsTopicSuffixes: [(pushType: String, suffix: String)] = [
    ("location", ".location-query"), ("voip", ".voip"), ("complication", ".complication"),
    ("fileprovider", ".pushkit.fileprovider"), ("liveactivity", ".push-type.liveactivity"), ("pushtotalk", ".voip-ptt"),
    ("widgets", ".push-type.widgets"), ("controls", ".push-type.controls"),
]

/// The suffix Apple's header table appends to the bundle id for
/// `pushType`; empty for `alert`, `background`, `mdm` and a push type
/// Apple does not list.
public func apnsTopicSuffix(pushType: String) -> String {
    apnsTopicSuffixes.first { $0.pushType == pushType }?.suffix ?? ""
}

/// The `apns-topic` of a `pushType` notification for the app whose topic is
/// `appTopic`: that topic with the push type's suffix, unless it already
/// ends with it (an app configured by its VoIP certificate, whose UID is
/// `<bundle id>.voip`).
public func apnsTopic(appTopic: String, pushType: String) -> String {
    let suffix = apnsTopicSuffix(pushType: pushType)
    return suffix.isEmpty || endsWith(appTopic, suffix) ? appTopic : appTopic + suffix
}

/// `topic` less the suffix of one of Apple's push types, when it ends with
/// one and a bundle id precedes it: the topic of the app it is for. nil
/// otherwise.
public func apnsBundleID(ofTopic topic: String) -> String? {
    for (_, suffix) in apnsTopicSuffixes where topic.utf8.count > suffix.utf8.count && endsWith(topic, suffix) {
        return String(decoding: topic.utf8.dropLast(suffix.utf8.count), as: UTF8.self)
    }
    return nil
}

/// Byte for byte, as APNs compares topics (String's own `hasSuffix`
/// compares characters).
private func endsWith(_ text: String, _ suffix: String) -> Bool {
    text.utf8.count >= suffix.utf8.count && text.utf8.suffix(suffix.utf8.count).elementsEqual(suffix.utf8)
}
