/// Why an apps file does not load: one line naming the file, the app (or
/// the `[[api-key]]` entry) and the key (every error names the
/// file, the app and the key, in one line). Never carries a secret's value
/// (`p12-password`, `p12-base64`, `p8`, an API key's `key`), not even a
/// malformed one: the message says what is wrong with it.
public struct AppsFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The path as the caller gave it.
    public var file: String
    /// The app's id, or "app #3" (its position, from 1) while it has no
    /// valid id; nil for errors outside any app.
    public var app: String?
    /// The `[[api-key]]` entry's name, or "api-key #2" (its position among
    /// them, from 1) while it has no valid name; nil outside one.
    public var apiKey: String?
    /// The key as the file writes it; for an environment's table,
    /// "development.key-id".
    public var key: String?
    /// For TOML syntax errors and characters the file may not hold.
    public var line: Int?
    public var column: Int?
    public var message: String

    public init(file: String, app: String? = nil, apiKey: String? = nil, key: String? = nil, line: Int? = nil,
                column: Int? = nil, message: String) {
        self.file = file
        (self.app, self.apiKey, self.key) = (app, apiKey, key)
        (self.line, self.column) = (line, column)
        self.message = message
    }

    /// `<file>: app "<id>", key "<key>": <message>` (`api-key "<name>"`
    /// in an `[[api-key]]`), or
    /// `<file>:<line>:<column>: <message>` where the place is a position in
    /// the text. Always one line: a line break or control character in the
    /// file's name, a key or the message is written as an escape.
    public var description: String {
        var parts = [escapingControls(file)]
        if let line {
            parts[0] += ":\(line)" + (column.map { ":\($0)" } ?? "")
        } else {
            var place: [String] = []
            // An id never holds a space, so "app #3" cannot be an id.
            if let app { place.append(app.hasPrefix("app #") ? app : "app \(quoted(app))") }
            // Nor does a name, so "api-key #2" cannot be one.
            if let apiKey { place.append(apiKey.hasPrefix("api-key #") ? apiKey : "api-key \(quoted(apiKey))") }
            if let key { place.append("key \(quoted(key))") }
            if !place.isEmpty { parts.append(place.joined(separator: ", ")) }
        }
        parts.append(escapingControls(message))
        return parts.joined(separator: ": ")
    }
}

/// `text` in double quotes for an error message: `"` and `\` escaped,
/// control and line-break characters as `\u{…}` so the message stays one
/// line, cut after `limit` characters. Only for what may be shown: ids,
/// topics, paths, key ids, key names, never a secret.
func quoted(_ text: String, limit: Int = 80) -> String {
    var result = "\""
    var count = 0
    for scalar in text.unicodeScalars {
        if count == limit {
            result += "…"
            break
        }
        count += 1
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        default: result += escapingControls(String(scalar))
        }
    }
    return result + "\""
}

/// `text` with every control, line or paragraph separator written as
/// `\u{…}`, so that it cannot break the one line an error is.
func escapingControls(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: breaksLine) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
        if breaksLine(scalar) {
            result += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            result.unicodeScalars.append(scalar)
        }
    }
    return result
}

/// C0 and C1 controls (U+0085 NEL among them), U+2028 and U+2029: what
/// Unicode or a terminal may take for the end of a line.
private func breaksLine(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control, .lineSeparator, .paragraphSeparator: true
    default: false
    }
}
