import Foundation
import HTTPCore
@testable import ProviderAPI
import RelayCore
import Testing

/// Two valid device tokens (32 bytes in hex, as Apple's are today).
let tokenA = String(repeating: "a1", count: 32)
let tokenB = String(repeating: "B2", count: 32)

let roomyLimits = ProviderLimits(maxBodyBytes: 1 << 20, maxNotifications: 100, maxTokens: 10_000)

/// Decodes a request whose only notification is platform 1 to `tokenA`
/// with the extra `fields` (JSON members, without braces).
func decodeOne(_ fields: String) throws -> ProviderNotification {
    let separator = fields.isEmpty ? "" : ","
    let body = #"{"notifications":[{"platform":1,"tokens":[""# + tokenA + #""]"# + separator + fields + "}]}"
    let notifications = try decodeGorushRequest(Array(body.utf8), limits: roomyLimits)
    return try #require(notifications.first)
}

/// The value Foundation's own JSON reader makes of `bytes`: a second,
/// independent reading of what the module wrote.
func foundationJSON(_ bytes: [UInt8]) throws -> NSObject {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as? NSObject)
}

/// Whether two JSON texts hold the same values (key order aside), as
/// Foundation reads them.
func sameJSON(_ bytes: [UInt8], _ expected: String) throws -> Bool {
    try foundationJSON(bytes).isEqual(try foundationJSON(Array(expected.utf8)))
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// The headers as `name: value` lines, for readable comparisons.
func lines(_ headers: [HTTPField]) -> [String] { headers.map { "\($0.name): \($0.value)" } }

/// A table row: a notification's extra `fields` and what they must give
/// (a message's members, an error's words).
struct FieldsCase: Sendable, CustomTestStringConvertible {
    var fields: String
    var expected: String
    var testDescription: String { fields }
}
