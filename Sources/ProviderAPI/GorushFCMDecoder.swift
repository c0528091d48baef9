// Decoding the FCM fields of a gorush notification with the strictness of
// Go's decoder binding gorush's `PushNotification`: a field of the wrong
// type fails the whole request, whatever the notification's platform
// (Go decodes every field before gorush looks at `platform`); `null` is a
// field not given; unknown members are ignored. Where firebase-admin-go's
// own `UnmarshalJSON` refuses a value (`android.ttl`, the enums of
// `android.notification`), the request is refused too.

import JSON

/// Reads one of the FCM fields (`image`, `condition`, `notification`,
/// `android`, `fcm_options`, `collapse_key`, `time_to_live`) into `fields`, made when
/// the notification's first one comes.
func decodeFCMField(_ name: String, _ value: JSONValue, _ path: String,
                    into fields: inout ProviderFCMFields?) throws(ProviderRequestError) {
    var f = fields ?? ProviderFCMFields()
    switch name {
    case "image": f.image = try string(value, path)
    case "condition": f.condition = try string(value, path)
    case "collapse_key": f.collapseKey = try string(value, path)
    case "time_to_live":
        if value == .null { f.timeToLive = nil; break }
        // gorush v1.17's `*uint`.
        let seconds = try int64(value, path)
        guard seconds >= 0 else { throw ProviderRequestError("\(path) must be an integer of 0 or more, not \(seconds).") }
        f.timeToLive = seconds
    case "notification": f.notification = value == .null ? nil : try fcmNotification(value, path)
    case "android": f.android = value == .null ? nil : try androidConfig(value, path)
    case "fcm_options": f.analyticsLabel = try analyticsLabel(value, path)
    default: break
    }
    fields = f
}

private func fcmNotification(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> ProviderFCMNotification {
    var n = ProviderFCMNotification()
    for member in try object(value, path) {
        let at = path + "." + member.name
        switch member.name {
        case "title": n.title = try string(member.value, at)
        case "body": n.body = try string(member.value, at)
        case "image": n.image = try string(member.value, at)
        case "android_channel_id": try keepAndroidMember("channel_id", member.value, at, in: &n.androidMembers)
        case "icon", "color", "sound", "tag", "click_action", "body_loc_key", "body_loc_args", "title_loc_key",
             "title_loc_args":
            try keepAndroidMember(member.name, member.value, at, in: &n.androidMembers)
        default: continue
        }
    }
    return n
}

private func androidConfig(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> ProviderAndroidConfig {
    var a = ProviderAndroidConfig()
    for member in try object(value, path) {
        let (v, at) = (member.value, path + "." + member.name)
        switch member.name {
        case "collapse_key": a.collapseKey = try string(v, at)
        case "priority": a.priority = try string(v, at)
        case "restricted_package_name": a.restrictedPackageName = try string(v, at)
        case "ttl":
            let text = try string(v, at)
            a.ttlNanoseconds = text.isEmpty ? nil : try durationNanoseconds(text, at)
        case "data":
            if v == .null { a.data = nil; break }
            var data: [String: String] = [:]
            for entry in try object(v, at) { data[entry.name] = try string(entry.value, at + "." + entry.name) }
            a.data = data
        case "notification": a.notification = v == .null ? nil : try androidNotification(v, at)
        case "fcm_options": a.analyticsLabel = try analyticsLabel(v, at)
        case "direct_boot_ok": a.directBootOK = try bool(v, at)
        case "bandwidth_constrained_ok": a.bandwidthConstrainedOK = try bool(v, at)
        case "restricted_satellite_ok": a.restrictedSatelliteOK = try bool(v, at)
        default: continue
        }
    }
    return a
}

/// FCMOptions and AndroidFCMOptions: `analytics_label`; nil for `null`.
private func analyticsLabel(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> String? {
    if value == .null { return nil }
    var label = ""
    for member in try object(value, path) where member.name == "analytics_label" {
        label = try string(member.value, path + ".analytics_label")
    }
    return label
}

/// The members of AndroidNotification this relay forwards, checked by
/// kind; kept only when Go's encoder would write them.
private func androidNotification(_ value: JSONValue, _ path: String) throws(ProviderRequestError) -> [String: JSONValue] {
    var kept: [String: JSONValue] = [:]
    for member in try object(value, path) {
        try keepAndroidMember(member.name, member.value, path + "." + member.name, in: &kept)
    }
    return kept
}

/// Checks `v` by the kind AndroidNotification's member `name` has and
/// keeps it in `kept` when Go's encoder would write it; an unknown name is
/// ignored.
private func keepAndroidMember(_ name: String, _ v: JSONValue, _ at: String,
                               in kept: inout [String: JSONValue]) throws(ProviderRequestError) {
    guard let kind = androidNotificationFields.first(where: { $0.name == name })?.kind else { return }
    switch kind {
    case .string:
        let text = try string(v, at)
        if !text.isEmpty { kept[name] = .string(text) }
    case .strings:
        let list = try strings(v, at)
        if !list.isEmpty { kept[name] = .array(list.map(JSONValue.string)) }
    case .flag:
        if try bool(v, at) { kept[name] = .bool(true) }
    case .count:
        // Go's `int`: 64 bits here.
        if v != .null { kept[name] = .number(String(try int64(v, at))) }
    case .oneOf(let allowed):
        let text = try string(v, at)
        guard text.isEmpty || allowed.contains(text) else {
            throw ProviderRequestError("\(at) must be one of \(allowed.joined(separator: ", ")), not \(quotedForMessage(text)).")
        }
        if !text.isEmpty { kept[name] = .string(text) }
    }
}

/// firebase-admin-go's `stringToDuration`, quirks included: one `s`
/// dropped from the end, then seconds and an optional part after a `.`
/// read as a whole number of nanoseconds with its leading zeros trimmed
/// (`"1.5s"` is 1 s and 5 ns; `"1.0s"` fails, as in Go). A sum past
/// Int64 nanoseconds is refused rather than wrapped as Go would.
func durationNanoseconds(_ text: String, _ path: String) throws(ProviderRequestError) -> Int64 {
    let refused = ProviderRequestError("\(path) must be a duration such as \"3600s\", not \(quotedForMessage(text)).")
    let trimmed = text.hasSuffix("s") ? text.dropLast() : Substring(text)
    let segments = trimmed.split(separator: ".", omittingEmptySubsequences: false)
    guard segments.count == 1 || segments.count == 2, let seconds = goParseInt(segments[0]) else { throw refused }
    var (total, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if segments.count == 2 {
        guard !overflow, let nanos = goParseInt(segments[1].drop { $0 == "0" }) else { throw refused }
        (total, overflow) = total.addingReportingOverflow(nanos)
    }
    guard !overflow else { throw refused }
    return total
}

/// Go's `strconv.ParseInt(text, 10, 64)`: an optional sign, then decimal
/// digits only.
private func goParseInt(_ text: Substring) -> Int64? {
    let digits = text.first == "+" || text.first == "-" ? text.dropFirst() : text
    guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
    return Int64(text.first == "+" ? digits : text)
}
