// The FCM HTTP v1 message gorush sends for a platform 2 notification:
// gorush's `GetAndroidNotification` (notify/notification_fcm.go, v1.22.0)
// filling firebase-admin-go's `messaging.Message` (v4.19), written as
// firebase-admin-go's `MarshalJSON`s write it — members in their order,
// `omitempty` ones only when set, maps with sorted keys — so FCM gets what
// it would get from gorush. The `apns` and `webpush` blocks gorush adds
// for Apple and browser targets are not sent: the relay's FCM path serves
// Android.

import FCMCore
import JSON
import RelayCore

/// The message's fields once gorush's setup steps ran.
struct GorushFCMMessage: Equatable {
    /// `message.data`: strings; nil when `data` was empty.
    var data: [String: String]?
    var notification: ProviderFCMNotification?
    var android: ProviderAndroidConfig?
    var analyticsLabel: String?

    /// gorush's `setupFCMNotification`, `setupFCMSound`, `setupFCMPriority`
    /// and `convertDataToStringMap`, in that order, with the v1.17 fields
    /// (`notification`'s Android members, `collapse_key`, `time_to_live`)
    /// where `android` leaves them unset.
    init(_ n: ProviderNotification) {
        let fields = n.fcm
        notification = fields.notification
        if !n.title.isEmpty || !n.message.isEmpty || !fields.image.isEmpty {
            var given = notification ?? ProviderFCMNotification()
            if !n.title.isEmpty { given.title = n.title }
            if !n.message.isEmpty { given.body = n.message }
            if !fields.image.isEmpty { given.image = fields.image }
            notification = given
        }
        android = fields.android
        analyticsLabel = fields.analyticsLabel
        // A string sound makes the AndroidConfig only when there is none.
        if case .name(let sound)? = n.sound, android == nil {
            var made = ProviderAndroidConfig()
            made.priority = n.priority
            made.notification = sound.isEmpty ? [:] : ["sound": .string(sound)]
            android = made
        }
        if let legacy = notification?.androidMembers, !legacy.isEmpty {
            var config = android ?? ProviderAndroidConfig()
            config.notification = legacy.merging(config.notification ?? [:]) { _, own in own }
            android = config
        }
        if !n.priority.isEmpty {
            var config = android ?? ProviderAndroidConfig()
            if config.priority.isEmpty { config.priority = n.priority }
            android = config
        }
        if !fields.collapseKey.isEmpty {
            var config = android ?? ProviderAndroidConfig()
            if config.collapseKey.isEmpty { config.collapseKey = fields.collapseKey }
            android = config
        }
        if let seconds = fields.timeToLive {
            var config = android ?? ProviderAndroidConfig()
            if config.ttlNanoseconds == nil {
                config.ttlNanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
                    ? Int64.max : seconds * 1_000_000_000
            }
            android = config
        }
        if !n.data.isEmpty {
            var strings: [String: String] = [:]
            for member in n.data {
                if case .string(let text) = member.value { strings[member.name] = text } else {
                    strings[member.name] = goJSONText(member.value)
                }
            }
            data = strings
        }
    }

    /// `{"data":…,"notification":…,"android":…,"fcm_options":…` (those present, the
    /// object not closed): the members every message of the notification
    /// shares, between its `topic` and its `token` or `condition`.
    func sharedMembers() -> ObjectWriter {
        var w = ObjectWriter()
        if let data { w.stringMap("data", data) }
        if let notification {
            w.key("notification")
            var o = ObjectWriter(output: w.output)
            o.string("title", notification.title)
            o.string("body", notification.body)
            o.string("image", notification.image)
            w.output = o.finish()
        }
        if let android {
            w.key("android")
            var o = ObjectWriter(output: w.output)
            if let ttl = android.ttlNanoseconds { o.string("ttl", goDurationText(ttl)) }
            o.string("collapse_key", android.collapseKey)
            o.string("priority", android.priority)
            o.string("restricted_package_name", android.restrictedPackageName)
            if let data = android.data, !data.isEmpty { o.stringMap("data", data) }
            if let members = android.notification {
                o.key("notification")
                var m = ObjectWriter(output: o.output)
                for field in androidNotificationFields {
                    if let value = members[field.name] {
                        m.key(named: field.name)
                        value.appendJSON(to: &m.output)
                    }
                }
                o.output = m.finish()
            }
            if let label = android.analyticsLabel { o.analyticsLabel("fcm_options", label) }
            o.flag("direct_boot_ok", android.directBootOK)
            o.flag("bandwidth_constrained_ok", android.bandwidthConstrainedOK)
            o.flag("restricted_satellite_ok", android.restrictedSatelliteOK)
            w.output = o.finish()
        }
        if let label = analyticsLabel { w.analyticsLabel("fcm_options", label) }
        return w
    }
}

/// `{"message":{<shared>,"token":"<token>"}}`.
func fcmTokenMessageBody(shared: ObjectWriter, token: FCMToken) -> [UInt8] {
    var w = ObjectWriter(output: Array(#"{"message":"#.utf8) + shared.output, empty: shared.empty)
    w.string("token", token.text)
    return w.finish() + "}".utf8
}

/// `{"message":{"topic":…,<shared>,"condition":…}}`: the topic without
/// firebase-admin-go's optional `/topics/` prefix, first, as its
/// `MarshalJSON` writes it.
func fcmTopicMessageBody(shared: ObjectWriter, topic: String, condition: String) -> [UInt8] {
    var w = ObjectWriter(output: Array(#"{"message":"#.utf8))
    w.string("topic", topic.hasPrefix("/topics/") ? String(topic.dropFirst("/topics/".count)) : topic)
    if !shared.empty {
        // The shared members' text without its opening brace.
        w.output.append(UInt8(ascii: w.empty ? "{" : ","))
        w.output += shared.output.dropFirst()
        w.empty = false
    }
    w.string("condition", condition)
    return w.finish() + "}".utf8
}

/// firebase-admin-go's `durationToString`: whole seconds, or nine digits
/// of nanoseconds after a point.
func goDurationText(_ nanoseconds: Int64) -> String {
    let (seconds, nanos) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
    guard nanos > 0 else { return "\(seconds)s" }
    let fraction = String(nanos)
    return "\(seconds)." + String(repeating: "0", count: 9 - fraction.count) + fraction + "s"
}

extension ObjectWriter {
    init() { self.init(output: [], empty: true) }

    /// A key the caller has as a String (a table's).
    mutating func key(named name: String) {
        output.append(UInt8(ascii: empty ? "{" : ","))
        empty = false
        appendJSONString(name, to: &output)
        output.append(UInt8(ascii: ":"))
    }

    mutating func flag(_ name: StaticString, _ set: Bool) {
        guard set else { return }
        key(name)
        output += "true".utf8
    }

    /// FCMOptions: `{"analytics_label":…}`, `{}` without a label.
    mutating func analyticsLabel(_ name: StaticString, _ label: String) {
        key(name)
        var o = ObjectWriter(output: output)
        o.string("analytics_label", label)
        output = o.finish()
    }

    /// A `map[string]string`: keys sorted by their bytes.
    mutating func stringMap(_ name: StaticString, _ map: [String: String]) {
        key(name)
        let members = sortedByBytes(map.map { JSONMember(name: $0.key, value: .string($0.value)) })
        JSONValue.object(members).appendJSON(to: &output)
    }
}
