// The APNs payload gorush sends for a notification: gorush's
// `buildIOSPayload` and `iosAlertDictionary` (notify/notification_apns.go)
// driving sideshow/apns2's payload builder (payload/builder.go), step for
// step, so every quirk carries over: a message without a title is the
// alert string, a title makes the alert a dictionary (and a later
// dictionary field replaces the string), top-level `name`/`volume` replace
// `sound` with apns2's critical sound, and zero values are left out.

import JSON
import RelayCore

/// apns2's `aps` struct as the builder fills it; encoded in its field order.
struct GorushAPS {
    enum Alert {
        case text(String)
        case dictionary(ProviderAlert)
    }

    /// apns2's `sound()` makes its own struct, {critical 1, "default", 1.0},
    /// unless the sound already is one; gorush's own sound is not.
    enum Sound {
        case gorush(ProviderSound)
        case apns2(name: String, volume: Float)
    }

    var alert: Alert?
    var badge: Int?
    var category = ""
    var contentAvailable = false
    var interruptionLevel = ""
    var mutableContent = false
    var relevanceScore: Float?
    var sound: Sound?
    var threadID = ""
    var urlArgs: [String] = []
    var contentState: [JSONMember] = []
    var dismissalDate: Int64 = 0
    var staleDate: Int64 = 0
    var event = ""
    var timestamp: Int64 = 0
    var attributesType = ""
    var attributes: [JSONMember] = []
    /// Apple's keys after apns2's own: gorush has none for them.
    var inputPushToken: Int64 = 0
    var inputPushChannel = ""

    /// apns2's `alert()`: the dictionary, made empty when the alert was a
    /// string or absent.
    mutating func withAlertDictionary(_ change: (inout ProviderAlert) -> Void) {
        var dictionary = ProviderAlert()
        if case .dictionary(let existing)? = alert { dictionary = existing }
        change(&dictionary)
        alert = .dictionary(dictionary)
    }

    mutating func withCriticalSound(_ change: (inout String, inout Float) -> Void) {
        var name = "default", volume: Float = 1
        if case .apns2(let existingName, let existingVolume)? = sound { (name, volume) = (existingName, existingVolume) }
        change(&name, &volume)
        sound = .apns2(name: name, volume: volume)
    }
}

/// Whether gorush, after copying `data` into the payload, calls apns2's
/// `aps()` again: with a `data.aps` that is not apns2's struct, that call
/// panics in gorush (a type assertion). Without one, `data.aps` replaces
/// the aps gorush built so far, which some senders use to send their own.
func gorushTouchesAPSAfterData(_ n: ProviderNotification) -> Bool {
    let a = n.alert
    return !n.interruptionLevel.isEmpty || !n.category.isEmpty || !n.title.isEmpty
        || !a.title.isEmpty || !a.body.isEmpty || !a.subtitle.isEmpty || !a.titleLocKey.isEmpty
        || !a.titleLocArgs.isEmpty || !a.locKey.isEmpty || !a.locArgs.isEmpty || !a.actionLocKey.isEmpty
        || !a.launchImage.isEmpty || !a.action.isEmpty || !a.summaryArg.isEmpty || a.summaryArgCount > 0
        || !n.contentState.isEmpty || n.staleDate > 0 || n.dismissalDate > 0 || !n.event.isEmpty
        || n.timestamp > 0 || !n.attributesType.isEmpty || !n.attributes.isEmpty || n.relevanceScore != nil
        || n.inputPushToken > 0 || !n.inputPushChannel.isEmpty
}

/// The `aps` dictionary gorush builds for `n` (before `data`).
func gorushAPS(for n: ProviderNotification) -> GorushAPS {
    var aps = GorushAPS()
    // buildIOSPayload
    if !n.message.isEmpty && n.title.isEmpty { aps.alert = .text(n.message) }
    if let badge = n.badge, badge >= 0 { aps.badge = badge }  // 0 clears the badge
    if n.mutableContent { aps.mutableContent = true }
    if let sound = n.sound { aps.sound = .gorush(sound) }
    if !n.soundName.isEmpty { aps.withCriticalSound { name, _ in name = n.soundName } }
    if n.soundVolume > 0 { aps.withCriticalSound { _, volume in volume = n.soundVolume } }
    if n.contentAvailable { aps.contentAvailable = true }
    if !n.urlArgs.isEmpty { aps.urlArgs = n.urlArgs }
    if !n.threadID.isEmpty { aps.threadID = n.threadID }
    // iosAlertDictionary
    if !n.interruptionLevel.isEmpty { aps.interruptionLevel = n.interruptionLevel }
    if !n.category.isEmpty { aps.category = n.category }
    let a = n.alert
    if !n.title.isEmpty { aps.withAlertDictionary { $0.title = n.title } }
    if !n.message.isEmpty && !n.title.isEmpty { aps.withAlertDictionary { $0.body = n.message } }
    if !a.title.isEmpty { aps.withAlertDictionary { $0.title = a.title } }
    if !a.body.isEmpty { aps.withAlertDictionary { $0.body = a.body } }
    if !a.subtitle.isEmpty { aps.withAlertDictionary { $0.subtitle = a.subtitle } }
    if !a.titleLocKey.isEmpty { aps.withAlertDictionary { $0.titleLocKey = a.titleLocKey } }
    if !a.titleLocArgs.isEmpty { aps.withAlertDictionary { $0.titleLocArgs = a.titleLocArgs } }
    if !a.locKey.isEmpty { aps.withAlertDictionary { $0.locKey = a.locKey } }
    if !a.locArgs.isEmpty { aps.withAlertDictionary { $0.locArgs = a.locArgs } }
    if !a.actionLocKey.isEmpty { aps.withAlertDictionary { $0.actionLocKey = a.actionLocKey } }
    if !a.launchImage.isEmpty { aps.withAlertDictionary { $0.launchImage = a.launchImage } }
    if !a.action.isEmpty { aps.withAlertDictionary { $0.action = a.action } }
    if !a.summaryArg.isEmpty { aps.withAlertDictionary { $0.summaryArg = a.summaryArg } }
    if a.summaryArgCount > 0 { aps.withAlertDictionary { $0.summaryArgCount = a.summaryArgCount } }
    // setLiveActivityFields
    if !n.contentState.isEmpty { aps.contentState = n.contentState }
    if n.staleDate > 0 { aps.staleDate = n.staleDate }
    if n.dismissalDate > 0 { aps.dismissalDate = n.dismissalDate }
    if !n.event.isEmpty { aps.event = n.event }
    if n.timestamp > 0 { aps.timestamp = n.timestamp }
    if !n.attributesType.isEmpty { aps.attributesType = n.attributesType }
    if !n.attributes.isEmpty { aps.attributes = n.attributes }
    if let score = n.relevanceScore { aps.relevanceScore = Float(score) }
    // Set as gorush sets its integers and strings: only when positive or
    // not empty.
    if n.inputPushToken > 0 { aps.inputPushToken = n.inputPushToken }
    if !n.inputPushChannel.isEmpty { aps.inputPushChannel = n.inputPushChannel }
    return aps
}

/// The payload bytes: `{"aps":{…}, <data keys>…}`. A `data.aps` takes the
/// aps's place (the caller has refused it when gorush would panic). Keys
/// are in the sender's order, not Go's sorted order; values are the same.
func gorushPayload(for n: ProviderNotification) -> [UInt8] {
    var output: [UInt8] = []
    output.reserveCapacity(256)
    output.append(contentsOf: #"{"aps":"#.utf8)
    if let custom = n.data.first(where: { $0.name == "aps" }) {
        custom.value.appendJSON(to: &output)
    } else {
        gorushAPS(for: n).appendJSON(to: &output)
    }
    for member in n.data where member.name != "aps" {
        output.append(UInt8(ascii: ","))
        appendJSONString(member.name, to: &output)
        output.append(UInt8(ascii: ":"))
        member.value.appendJSON(to: &output)
    }
    output.append(UInt8(ascii: "}"))
    return output
}

/// Writes the members of an object Go's encoder would write: `omitempty`
/// fields only when set.
struct ObjectWriter {
    var output: [UInt8]
    var empty = true

    mutating func key(_ name: StaticString) {
        output.append(UInt8(ascii: empty ? "{" : ","))
        empty = false
        output.append(UInt8(ascii: "\""))
        output.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        output.append(contentsOf: #"":"#.utf8)
    }

    mutating func string(_ name: StaticString, _ value: String) {
        guard !value.isEmpty else { return }
        key(name)
        appendJSONString(value, to: &output)
    }

    mutating func strings(_ name: StaticString, _ values: [String]) {
        guard !values.isEmpty else { return }
        key(name)
        JSONValue.array(values.map(JSONValue.string)).appendJSON(to: &output)
    }

    mutating func integer(_ name: StaticString, _ value: Int64) {
        guard value != 0 else { return }
        key(name)
        output.append(contentsOf: String(value).utf8)
    }

    mutating func float(_ name: StaticString, _ value: Float) {
        guard value != 0 else { return }
        key(name)
        output.append(contentsOf: goFloat32Text(value).utf8)
    }

    mutating func object(_ name: StaticString, _ members: [JSONMember]) {
        guard !members.isEmpty else { return }
        key(name)
        JSONValue.object(members).appendJSON(to: &output)
    }

    mutating func finish() -> [UInt8] {
        output.append(contentsOf: (empty ? "{}" : "}").utf8)
        return output
    }
}

/// A float32 as Go's encoder writes it for these values: the shortest text
/// that reads back (Swift's `description` is that too), without Swift's
/// trailing `.0` on whole numbers.
func goFloat32Text(_ value: Float) -> String {
    let text = value.description
    return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
}

extension GorushAPS {
    func appendJSON(to output: inout [UInt8]) {
        var w = ObjectWriter(output: output)
        output = []
        switch alert {
        case .text(let text)?:
            w.key("alert")
            appendJSONString(text, to: &w.output)
        case .dictionary(let a)?:
            w.key("alert")
            var d = ObjectWriter(output: w.output)
            d.string("action", a.action)
            d.string("action-loc-key", a.actionLocKey)
            d.string("body", a.body)
            d.string("launch-image", a.launchImage)
            d.strings("loc-args", a.locArgs)
            d.string("loc-key", a.locKey)
            d.string("title", a.title)
            d.string("subtitle", a.subtitle)
            d.strings("title-loc-args", a.titleLocArgs)
            d.string("title-loc-key", a.titleLocKey)
            d.string("summary-arg", a.summaryArg)
            d.integer("summary-arg-count", Int64(a.summaryArgCount))
            w.output = d.finish()
        case nil: break
        }
        if let badge {
            // apns2 keeps the badge in an interface{}: 0 is written.
            w.key("badge")
            w.output.append(contentsOf: String(badge).utf8)
        }
        w.string("category", category)
        w.integer("content-available", contentAvailable ? 1 : 0)
        w.string("interruption-level", interruptionLevel)
        w.integer("mutable-content", mutableContent ? 1 : 0)
        if let relevanceScore {
            // An interface{} too: 0 is written.
            w.key("relevance-score")
            w.output.append(contentsOf: goFloat32Text(relevanceScore).utf8)
        }
        switch sound {
        case .gorush(.name(let name))?:
            // A pointer to the string: written even when empty.
            w.key("sound")
            appendJSONString(name, to: &w.output)
        case .gorush(.dictionary(let critical, let name, let volume))?:
            w.key("sound")
            var s = ObjectWriter(output: w.output)
            s.integer("critical", Int64(critical))
            s.string("name", name)
            s.float("volume", volume)
            w.output = s.finish()
        case .apns2(let name, let volume)?:
            w.key("sound")
            var s = ObjectWriter(output: w.output)
            s.integer("critical", 1)
            s.string("name", name)
            s.float("volume", volume)
            w.output = s.finish()
        case nil: break
        }
        w.string("thread-id", threadID)
        w.strings("url-args", urlArgs)
        w.object("content-state", contentState)
        w.integer("dismissal-date", dismissalDate)
        w.integer("stale-date", staleDate)
        w.string("event", event)
        w.integer("timestamp", timestamp)
        w.string("attributes-type", attributesType)
        w.object("attributes", attributes)
        w.integer("input-push-token", inputPushToken)
        w.string("input-push-channel", inputPushChannel)
        output = w.finish()
    }
}
