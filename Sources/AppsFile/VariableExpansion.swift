// `${NAME}` in an apps file's string values (`${NAME}` in any
// string reads that environment variable; an unset one is an error that
// names it), so that passwords and keys can stay out of the file.

/// Why a string's `${…}` could not be expanded. Names the variable, never
/// the text around it (which may be a secret).
enum VariableExpansionError: Error, Equatable {
    /// `${NAME}` names a variable the environment does not set.
    case unset(name: String)
    /// `${` not followed by a name ([A-Za-z_][A-Za-z0-9_]*) and `}`.
    case malformed

    var message: String {
        switch self {
        case .unset(let name):
            "the environment variable \(name) is not set"
        case .malformed:
            "\"${\" must start a reference such as ${NAME} (a letter or \"_\", then letters, digits or \"_\", then \"}\"); write \"$${\" for a literal \"${\""
        }
    }
}

/// `text` with each `${NAME}` replaced by `environment[NAME]` (set but
/// empty is the empty string) and each `$${` by a literal `${`; any other
/// `$` stays as it is. What a variable holds is not expanded again.
func expandVariables(in text: String, environment: [String: String]) throws(VariableExpansionError) -> String {
    let bytes = Array(text.utf8)
    guard bytes.contains(UInt8(ascii: "$")) else { return text }
    var result: [UInt8] = []
    result.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        guard byte == UInt8(ascii: "$") else {
            result.append(byte)
            index += 1
            continue
        }
        if bytes.starts(at: index + 1, with: "${") {
            result += Array("${".utf8)
            index += 3
        } else if bytes.starts(at: index + 1, with: "{") {
            let nameStart = index + 2
            var nameEnd = nameStart
            while nameEnd < bytes.count, isNameByte(bytes[nameEnd], first: nameEnd == nameStart) { nameEnd += 1 }
            guard nameEnd > nameStart, nameEnd < bytes.count, bytes[nameEnd] == UInt8(ascii: "}") else {
                throw .malformed
            }
            let name = String(decoding: bytes[nameStart..<nameEnd], as: UTF8.self)
            guard let value = environment[name] else { throw .unset(name: name) }
            result += Array(value.utf8)
            index = nameEnd + 1
        } else {
            result.append(byte)
            index += 1
        }
    }
    return String(decoding: result, as: UTF8.self)
}

/// [A-Za-z_] first, [A-Za-z0-9_] after: a portable environment variable
/// name (POSIX.1-2017 §8.1).
private func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "_"): true
    case UInt8(ascii: "0")...UInt8(ascii: "9"): !first
    default: false
    }
}

extension Array<UInt8> {
    /// Whether the bytes from `offset` on begin with `prefix`'s UTF-8.
    fileprivate func starts(at offset: Int, with prefix: String) -> Bool {
        offset <= count && self[offset...].starts(with: prefix.utf8)
    }
}
