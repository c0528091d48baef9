
/// Fault injection through the device token, so an end-to-end test can make
/// the emulator produce each row of WIRE.md §3 with a real request.
///
/// A token (still 64 valid hex digits) that starts with the marker `fa11fa11`
/// followed by a two-digit code gets the outcome below instead of 200;
/// case is ignored, the remaining digits are free. An unknown code is an
/// ordinary token. Faults apply only to requests that pass validation.
///
/// | token prefix   | outcome                                    |
/// |----------------|--------------------------------------------|
/// | `fa11fa1101`   | 410 Unregistered (with `timestamp`)        |
/// | `fa11fa1102`   | 400 BadDeviceToken                         |
/// | `fa11fa1103`   | 400 DeviceTokenNotForTopic                 |
/// | `fa11fa1104`   | 413 PayloadTooLarge                        |
/// | `fa11fa1105`   | 429 TooManyRequests                        |
/// | `fa11fa1106`   | 400 BadPriority (a 400 about our request)  |
/// | `fa11fa1107`   | 403 BadCertificate                         |
/// | `fa11fa1108`   | 403 ExpiredProviderToken                   |
/// | `fa11fa1109`   | 403 InvalidProviderToken                   |
/// | `fa11fa110a`   | 404 BadPath                                |
/// | `fa11fa110b`   | 405 MethodNotAllowed                       |
/// | `fa11fa110c`   | 500 InternalServerError                    |
/// | `fa11fa110d`   | 503 ServiceUnavailable                     |
/// | `fa11fa110e`   | no answer (the client's timeout must fire) |
/// | `fa11fa110f`   | RST_STREAM (INTERNAL_ERROR) on the stream  |
/// | `fa11fa1110`   | drop the whole TCP connection              |
/// | `fa11fa1111`   | 410 ExpiredToken (with `timestamp`)        |
/// | `fa11fa1112`   | 503 Shutdown                               |
/// | `fa11fa1113`   | 429 TooManyProviderTokenUpdates            |
/// | `fa11fa1114`   | 403 Forbidden                              |
/// | `fa11fa1115`   | 503 ServiceUnavailable, `retry-after: 3`   |
/// | `fa11fa1116`   | 429 TooManyRequests, `retry-after: 120`    |
public enum APNsFaultToken {
    /// The hex marker that starts every fault token.
    public static let marker = "fa11fa11"

    /// Every fault code with its action, in table order.
    public static let table: [(code: UInt8, action: APNsEmulatorAction)] = [
        (0x01, .reject(.unregistered)),
        (0x02, .reject(.badDeviceToken)),
        (0x03, .reject(.deviceTokenNotForTopic)),
        (0x04, .reject(.payloadTooLarge)),
        (0x05, .reject(.tooManyRequests)),
        (0x06, .reject(.badPriority)),
        (0x07, .reject(.badCertificate)),
        (0x08, .reject(.expiredProviderToken)),
        (0x09, .reject(.invalidProviderToken)),
        (0x0a, .reject(.badPath)),
        (0x0b, .reject(.methodNotAllowed)),
        (0x0c, .reject(.internalServerError)),
        (0x0d, .reject(.serviceUnavailable)),
        (0x0e, .noAnswer),
        (0x0f, .resetStream),
        (0x10, .dropConnection),
        (0x11, .reject(.expiredToken)),
        (0x12, .reject(.shutdown)),
        (0x13, .reject(.tooManyProviderTokenUpdates)),
        (0x14, .reject(.forbidden)),
        (0x15, .rejectRetryingAfter(status: 503, reason: .serviceUnavailable, seconds: 3)),
        (0x16, .rejectRetryingAfter(status: 429, reason: .tooManyRequests, seconds: 120)),
    ]

    /// The action for `code`, nil when the code is not in the table.
    public static func action(forCode code: UInt8) -> APNsEmulatorAction? {
        let index = Int(code) - 1
        guard index >= 0, index < table.count else { return nil }
        return table[index].action
    }

    /// A 64-digit token that triggers `code` (lowercase hex; `filler`
    /// distinguishes several tokens for the same fault).
    public static func token(code: UInt8, filler: UInt32 = 0) -> String {
        let codeText = hexByte(code)
        let fillerText = String(filler, radix: 16)
        let padding = 64 - marker.utf8.count - 2 - fillerText.utf8.count
        return marker + codeText + String(repeating: "0", count: max(padding, 0)) + fillerText
    }

    /// The action a token selects, nil for an ordinary token. Cheap: checks
    /// ten bytes.
    public static func action(forToken token: Substring.UTF8View) -> APNsEmulatorAction? {
        code(forToken: token).flatMap(action(forCode:))
    }

    /// The code after the marker (FCM's fault tokens share the form), nil
    /// when the token does not start with the marker and two hex digits.
    static func code(forToken token: Substring.UTF8View) -> UInt8? {
        guard token.count >= 10 else { return nil }
        var index = token.startIndex
        for expected in marker.utf8 {
            guard lowercase(token[index]) == expected else { return nil }
            index = token.index(after: index)
        }
        guard let high = hexValue(token[index]) else { return nil }
        index = token.index(after: index)
        guard let low = hexValue(token[index]) else { return nil }
        return high << 4 | low
    }

    @inline(__always)
    private static func lowercase(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func hexByte(_ value: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(value >> 4)], digits[Int(value & 0xf)]], as: UTF8.self)
    }
}
