// pyapns' answers (pyapns/server.py): provision and notify return None,
// which Twisted's XML-RPC resource (allowNone=True) writes as <nil/>;
// feedback returns `[(datetime, token_str), …]`, which xmlrpclib writes as
// an array of two-item arrays: <dateTime.iso8601> and the hex token.
// pyapns made the time with `datetime.fromtimestamp`, the server's local
// time; here it is UTC, whatever the machine's zone.

import XMLRPC

/// The methodResponse of a provision or notify that succeeded.
public let pyAPNsNilResponse: [UInt8] = encodeXMLRPCResponse(.nil)

/// The methodResponse of feedback: one `[dateTime, token]` pair per
/// refused token, its time in Unix seconds (UTC).
public func pyAPNsFeedbackResponse(_ entries: [(unixSeconds: Int, token: String)]) -> [UInt8] {
    encodeXMLRPCResponse(.array(entries.map { entry in
        .array([.dateTime(XMLRPCDateTime(unixSeconds: entry.unixSeconds)), .string(entry.token)])
    }))
}
