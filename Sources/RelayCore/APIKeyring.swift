// Who may use the provider API (WIRE.md §4.1, "Keys"): the keys of
// `API_KEYS` and of the apps file's `[[api-key]]` entries, and the one
// check of a request's `Authorization` against them. Pure: the API handler
// asks, and answers 401 (no key, or a wrong one) or 403 (a key without the
// app).

import Base64URL
import HTTPCore

/// The apps one key may send for.
public enum APIKeyApps: Sendable, Equatable {
    /// Every app, apps provisioned later through pyapns' `provision`
    /// included: `API_KEYS`, and `apps = ["*"]` in the apps file.
    case all
    /// These app ids (`default`: the app the environment variables
    /// describe), in the file's order.
    case only([String])
}

/// One key: its name, for logs and metrics (`API_KEYS[2]`, or the apps
/// file's `name`), and the apps it may send for. Printing it never shows
/// the key (`APIKey`).
public struct APIKeyEntry: Sendable, Equatable {
    public var name: String
    public var key: APIKey
    public var apps: APIKeyApps
    /// The provider-token key (`jwt-key-id`, `jwt-team-id`,
    /// `jwt-public-key`) whose tokens `/3/device/` takes for these apps.
    public var providerKey: APIKeyProviderKey?
    /// `client-certificate-sha256`: the SHA-256 fingerprint of a TLS client
    /// certificate `/3/device/` takes for these apps.
    public var clientCertificateSHA256: [UInt8]?

    public init(name: String, key: APIKey, apps: APIKeyApps, providerKey: APIKeyProviderKey? = nil,
                clientCertificateSHA256: [UInt8]? = nil) {
        self.name = name
        self.key = key
        self.apps = apps
        self.providerKey = providerKey
        self.clientCertificateSHA256 = clientCertificateSHA256
    }

    /// `API_KEYS`' keys, named `API_KEYS[1]`, `API_KEYS[2]`… (from 1, in
    /// the variable's order), each for every app.
    public static func fromVariable(_ keys: [APIKey]) -> [APIKeyEntry] {
        keys.enumerated().map { APIKeyEntry(name: "API_KEYS[\($0.offset + 1)]", key: $0.element, apps: .all) }
    }
}

/// A backend's own provider-token key, of which the relay has the public
/// half only: its `kid`, its team (`iss`) and the PEM file
/// (SubjectPublicKeyInfo, P-256) read at start and on every reload.
public struct APIKeyProviderKey: Sendable, Equatable {
    public var keyID: String
    public var teamID: String
    public var publicKeyFile: String

    public init(keyID: String, teamID: String, publicKeyFile: String) {
        (self.keyID, self.teamID, self.publicKeyFile) = (keyID, teamID, publicKeyFile)
    }
}

/// What a request's `Authorization` field says.
public enum APIAuthorization: Sendable, Equatable {
    /// No `Authorization` field, or an empty one.
    case missing
    /// A scheme other than Bearer and Basic, credentials that are malformed,
    /// or a key the relay does not have.
    case invalid
    /// One of the relay's keys: its name and its apps.
    case key(name: String, apps: APIKeyApps)

    /// Whether this authorization may send for the app with id `app`
    /// (`default` for the app the variables describe; a provisioned app by
    /// the id pyapns' `provision` gave it). False without a key.
    public func allows(app: String) -> Bool {
        guard case .key(_, let apps) = self else { return false }
        switch apps {
        case .all: return true
        case .only(let ids): return ids.contains(app)
        }
    }
}

/// Why keys cannot form one keyring: two entries with one name or one key.
/// Names the entries, never a key.
public struct APIKeyringError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The relay's API keys: `API_KEYS` and the apps file's `[[api-key]]`
/// entries, swapped whole by a reload (`ServedApps.apiKeys`).
public struct APIKeyring: Sendable, Equatable {
    /// In order: `API_KEYS` first, then the apps file's.
    public let entries: [APIKeyEntry]

    /// No key at all.
    public static let empty = APIKeyring(checked: [])

    /// Refuses two entries with the same name (logs and metrics would mix
    /// them up) or the same key (which name and apps would a request get?).
    public init(_ entries: [APIKeyEntry]) throws(APIKeyringError) {
        for (index, entry) in entries.enumerated() {
            for earlier in entries[..<index] {
                if earlier.name == entry.name {
                    throw APIKeyringError(message: "two API keys are named \"\(entry.name)\"; give each its own name")
                }
                if earlier.key == entry.key {
                    throw APIKeyringError(message: "API keys \"\(earlier.name)\" and \"\(entry.name)\" are the same key; give each its own")
                }
            }
        }
        self.init(checked: entries)
    }

    private init(checked entries: [APIKeyEntry]) {
        self.entries = entries
    }

    /// No key: the API is open to whoever reaches its port, which the relay
    /// allows only on loopback (`apiExposureProblem`, in `Relay`). The API
    /// handler checks this before `authorize`, which finds no key here.
    public var isEmpty: Bool { entries.isEmpty }

    /// What the `Authorization` field's value (nil: none) says:
    /// `Bearer <key>` (RFC 6750 §2.1), or `Basic base64(user:password)`
    /// (RFC 7617 §2) with the key as the user or as the password, for
    /// XML-RPC clients that only do Basic (Python's `xmlrpc.client` sends
    /// `http://<key>@host/` as `Basic base64(<key>)`, without a colon,
    /// taken as a user alone). The scheme in any case and one or more
    /// spaces before the credentials (RFC 7235 §2.1: `auth-scheme
    /// [ 1*SP ( token68 / #auth-param ) ]`, the scheme case-insensitive).
    /// Basic naming two different keys, as user and password, is invalid.
    /// Never logs, and nothing it returns holds a key.
    public func authorize(authorization: String?) -> APIAuthorization {
        guard let authorization else { return .missing }
        let bytes = Array(trimmingOWS(Array(authorization.utf8)))
        if bytes.isEmpty { return .missing }
        let schemeEnd = bytes.firstIndex(of: UInt8(ascii: " ")) ?? bytes.endIndex
        let scheme = asciiLowercased(bytes[..<schemeEnd])
        let credentials = bytes[schemeEnd...].drop { $0 == UInt8(ascii: " ") }
        guard !credentials.isEmpty else { return .invalid }
        let candidates: [ArraySlice<UInt8>]
        switch scheme {
        case "bearer":
            candidates = [credentials]
        case "basic":
            guard let decoded = try? base64URLDecode(String(decoding: credentials, as: UTF8.self)) else {
                return .invalid
            }
            if let colon = decoded.firstIndex(of: UInt8(ascii: ":")) {
                candidates = [decoded[..<colon], decoded[(colon + 1)...]]
            } else {
                candidates = [decoded[...]]
            }
        default:
            return .invalid
        }
        var found: Int?
        for candidate in candidates {
            guard let index = matchingEntry(candidate) else { continue }
            if let other = found, other != index { return .invalid }
            found = index
        }
        guard let found else { return .invalid }
        return .key(name: entries[found].name, apps: entries[found].apps)
    }

    /// The index of the entry whose key is `candidate`, compared with every
    /// key and every byte of each, with no early exit: how long it takes
    /// does not tell which key nor how many leading bytes of one matched,
    /// so a key cannot be found byte by byte from the answers' timing.
    /// What it does not hide: the number of keys and their total length
    /// (each check walks every key's bytes), a key's length (compared
    /// plainly; keys are at least 16 random bytes, so a length says
    /// little), and whether a key matched (the answer says so anyway).
    /// A candidate longer than any key may be (`APIKey.maximumBytes`, a
    /// public number) is refused before any comparison, which bounds the
    /// work a hostile header causes.
    private func matchingEntry(_ candidate: ArraySlice<UInt8>) -> Int? {
        guard candidate.count <= APIKey.maximumBytes else { return nil }
        var found: Int?
        for index in entries.indices where constantTimeEqual(candidate, entries[index].key.bytes) {
            found = index
        }
        return found
    }
}

/// Whether `candidate` is `key`, looking at every byte of `key` whatever
/// differs first (see `APIKeyring.matchingEntry` for what this hides).
private func constantTimeEqual(_ candidate: ArraySlice<UInt8>, _ key: [UInt8]) -> Bool {
    var difference: UInt8 = candidate.count == key.count ? 0 : 1
    let start = candidate.startIndex
    for offset in 0..<key.count {
        // A candidate shorter than the key is read as zeros past its end;
        // the length check above has already made it differ.
        let byte = offset < candidate.count ? candidate[start + offset] : 0
        difference |= byte ^ key[offset]
    }
    return difference == 0
}
