// The OpenSSL edge (ARCHITECTURE.md §3): only the files in Sources/TLS/OpenSSL/
// call OpenSSL and touch its pointers. This one: the thread's error queue.
import COpenSSL

/// This thread's OpenSSL error queue, taken out as Swift values and summed up
/// in the one-line reasons TLSError and CredentialError carry.
enum OpenSSLErrorQueue {
    struct Entry {
        let library: Int32
        let reason: Int32
        let text: String
    }

    /// Empties this thread's error queue and returns what was in it, oldest first.
    static func takeAll() -> [Entry] {
        var entries: [Entry] = []
        while true {
            var data: UnsafePointer<CChar>? = nil
            var flags: Int32 = 0
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            if code == 0 { break }
            var text = ""
            if let library = ERR_lib_error_string(code) { text += String(cString: library) + ": " }
            if let reason = ERR_reason_error_string(code) {
                text += String(cString: reason)
            } else {
                text += "error \(ERR_GET_REASON(code))"
            }
            if let data, flags & ERR_TXT_STRING != 0 {
                let detail = String(cString: data)
                if !detail.isEmpty { text += " (\(detail))" }
            }
            entries.append(Entry(library: ERR_GET_LIB(code), reason: ERR_GET_REASON(code), text: text))
        }
        return entries
    }

    /// One line summing up `entries` (their distinct texts, at most three),
    /// or `fallback` when there are none.
    static func line(_ entries: [Entry], fallback: String) -> String {
        if entries.isEmpty { return fallback }
        var seen: [String] = []
        for entry in entries where !seen.contains(entry.text) { seen.append(entry.text) }
        return seen.prefix(3).joined(separator: "; ")
    }

    /// Empties the error queue into one line (see `line`).
    static func takeLine(fallback: String) -> String {
        line(takeAll(), fallback: fallback)
    }
}
