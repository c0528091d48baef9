/// An `application/x-www-form-urlencoded` body (the WHATWG URL standard's
/// parser, as RFC 6749 Appendix B refers to it): `name=value` pairs joined
/// by `&`, `+` a space, `%XX` a byte.
enum FormBody {
    /// The fields by name. A name given twice is refused (RFC 6749 §3.2:
    /// "Request and response parameters MUST NOT be included more than
    /// once"), as is a broken `%` escape.
    static func parse(_ body: [UInt8]) -> Result<[String: [UInt8]], FormBodyError> {
        var fields: [String: [UInt8]] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            guard let nameBytes = decode(pair[..<equals]),
                  let value = decode(equals == pair.endIndex ? pair[equals...] : pair[(equals + 1)...]) else {
                return .failure(FormBodyError(reason: "Invalid form encoding"))
            }
            let name = String(decoding: nameBytes, as: UTF8.self)
            guard fields.updateValue(value, forKey: name) == nil else {
                return .failure(FormBodyError(reason: "Parameter given more than once: \(name)"))
            }
        }
        return .success(fields)
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard bytes.endIndex - index >= 3,
                      let high = APNsFaultToken.hexValue(bytes[index + 1]),
                      let low = APNsFaultToken.hexValue(bytes[index + 2]) else { return nil }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return output
    }
}

struct FormBodyError: Error, Equatable {
    let reason: String
}
