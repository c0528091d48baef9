// The `alert` of a notification's `aps` dictionary (WIRE.md §2):
// each payload dialect's default, and the one place an app's own alert
// (`alert` or `alert-loc-key` in the apps file) replaces it.

import JSON

/// An `aps.alert` value, kept as the JSON it is written as: built once per
/// app, copied into every payload as is.
public struct APNsAlert: Sendable, Equatable {
    /// The alert's JSON value (a string or an object), escaped.
    let json: [UInt8]

    private init(json: [UInt8]) {
        self.json = json
    }

    /// A text shown as it is: `"alert":"<text>"`.
    public static func text(_ text: String) -> APNsAlert {
        var json: [UInt8] = [UInt8(ascii: "\"")]
        appendJSONStringContent(text, to: &json)
        json.append(UInt8(ascii: "\""))
        return APNsAlert(json: json)
    }

    /// A key into the app's Localizable.strings: `"alert":{"loc-key":"<key>"}`.
    public static func localized(key: String) -> APNsAlert {
        var json = Array(#"{"loc-key":""#.utf8)
        appendJSONStringContent(key, to: &json)
        json.append(contentsOf: #""}"#.utf8)
        return APNsAlert(json: json)
    }
}

/// Each dialect's default: what its iOS clients' notification service
/// extension replaces with the decrypted notification, and what iOS shows
/// should that fail. The payloads use them when the app has no alert of
/// its own (`makeNotification(…, alert: nil)`).
extension APNsAlert {
    /// toot-relay's (and webpush-apn-relay's) 🎺.
    public static let tootRelayDefault = APNsAlert.text("🎺")
    /// metatext-apns': Metatext and Feditext localize `apns-default-message`.
    public static let metatextDefault = APNsAlert.localized(key: "apns-default-message")
}
