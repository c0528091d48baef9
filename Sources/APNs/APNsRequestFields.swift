import HTTP2
import HTTPCore

/// The regular fields of one APNs request, read from the notification's own
/// array (no copy), then `authorization` with token auth. apns-id is unique
/// to the request: never indexed (RFC 7541 §6.2.3), so it does not churn the
/// HPACK tables of either side; the fields that repeat stay indexed.
struct APNsRequestFields: Sequence {
    let headers: [HTTPField]
    let authorization: String?

    struct Iterator: IteratorProtocol {
        let fields: APNsRequestFields
        var index = 0

        mutating func next() -> HTTPField? {
            defer { index += 1 }
            if index < fields.headers.count {
                let field = fields.headers[index]
                return HTTPField(name: field.name, value: field.value, neverIndexed: field.name == "apns-id")
            }
            if index == fields.headers.count, let authorization = fields.authorization {
                return HTTPField(name: "authorization", value: authorization)
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(fields: self) }

    var underestimatedCount: Int { headers.count + (authorization == nil ? 0 : 1) }
}
