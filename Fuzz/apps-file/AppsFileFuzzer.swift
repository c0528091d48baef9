// Fuzz target apps-file: `AppsFile.parse`, the apps file (and
// its `[[api-key]]` entries) — toml++ (through TOMLKit) and the
// file's rules.
//
// Input: [mode][…]; mode % 2:
// - 0: the rest is the file, decoded from bytes as the relay decodes it
//   (String(decoding:as: UTF8.self)): toml++ and the text checks on
//   anything.
// - 1: a file built from the input, statement by statement: `[[app]]`,
//   `[[api-key]]`, `[app.<environment>]` headers, `key = value` lines with
//   the apps file's keys and values of every type, raw lines. Only the
//   secret keys' values (`p12-password`, `p12-base64`, `p8`, an API
//   key's `key`) and the environment
//   variable ZSECRET hold the marker ⟦ or the digits 77777; everything
//   else the builder writes is kept free of them (no byte ≥ 0x80, no "7",
//   no "Z"), so an error showing either has shown a secret.
//
// Checked (a trap on violation): every error is one line, starts with the
// file's name and, for built files, shows no secret; a parsed file obeys
// the rules (ids and topics valid and unique, a topic is no other app's id,
// at most one default, every app not retired has a credential, token keys have a topic,
// key and team ids valid, no secret in a field that is not one; API key
// names valid and unique, keys unique, apps "*" or ids of the file's apps
// or "default"; jwt-key-id and jwt-team-id valid, jwt-public-key not empty,
// a client certificate's fingerprint 32 bytes; key ids and fingerprints
// unique); parsing
// the same text twice gives the same result.
//
// Built by scripts/fuzz with SwiftPM (toml++ is C++): there, with
// SWIFTPM_FUZZING defined, libFuzzer's main calls LLVMFuzzerTestOneInput.
// A plain `swift build` makes a replay tool of it instead:
// `apps-file-fuzzer <input file>…` runs the same checks on each file.

import AppsFile
import FuzzSupport
import RelayCore
#if canImport(Glibc)
import Glibc
#endif

private let file = "apps.toml"
private let environment = [
    "PLAIN": "plain", "ID": "toot", "TOPIC": "cx.c3.toot", "ENV": "development", "EMPTY": "",
    "ZSECRET": "⟦env-secret⟧",
    // What the shipped example reads (its seed); no marker, as any text may name them.
    "TOOT_P12_PASSWORD": "toot-password", "MONA_SANDBOX_P8": "-----BEGIN PRIVATE KEY-----",
    "STATUS_GATEWAY_API_KEY": "status-gateway-key-0123456789", "OPS_API_KEY": "ops-key-0123456789abcdef",
]

/// Text that may show only where a secret was.
private let secretMarkers = ["⟦", "77777", "27e6", "27E6"]

private let secretKeys = ["p12-password", "p12-base64", "p8", "key"]
private let otherKeys = [
    "id", "topic", "environments", "alert", "alert-loc-key", "default", "p12-file", "p8-file", "key-id", "team-id",
    "production", "development", "production.key-id", "development.p8-file", "api-key", "app", "idd", "name", "apps",
    "fcm-credentials", "jwt-key-id", "jwt-team-id", "jwt-public-key", "client-certificate-sha256",
]
/// Strings that reach past the type checks: valid ids, topics, paths, key
/// ids, environment names, `${…}` forms, reserved and bad names.
private let vocabulary = [
    "toot", "feditext", "beta", "cx.c3.toot", "com.example.app", "production", "development", "/etc/x.p12",
    "/etc/k.p8", "ABC123DEFG", "TEAM123456", "${PLAIN}", "${ID}", "${TOPIC}", "${ENV}", "${EMPTY}", "${NOPE}",
    "$${X}", "${", "", "default", "_health", "Toot", "a b", "..", "New notification", "*", "ops",
    "fcm", "/etc/firebase.json", "/etc/backend-public.pem", String(repeating: "ab", count: 32),
    Array(repeating: "AB", count: 32).joined(separator: ":"),
]

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let built = input.bool()
    let text = built ? buildFile(&input) : String(decoding: input.rest(), as: UTF8.self)
    let outcome = parse(text)
    switch outcome {
    case .success(let contents):
        trace("apps: \(contents.apps.map(\.id)), API keys: \(contents.apiKeys.map(\.name))")
        checkApps(contents.apps)
        checkAPIKeys(contents.apiKeys, appIDs: Set(contents.apps.map(\.id)))
    case .failure(let error):
        trace("error: \(error.description)")
        checkError(error, built: built)
    }
    require(parse(text) == outcome, "a second parse of the same text differs")
    return 0
}

private func parse(_ text: String) -> Result<AppsFileContents, AppsFileError> {
    Result { () throws(AppsFileError) in try AppsFile.parse(text, file: file, environment: environment) }
}

// MARK: - Checks

private func checkError(_ error: AppsFileError, built: Bool) {
    let description = error.description
    require(description.hasPrefix(file + ":"), "error does not start with the file: \(description)")
    require(!description.unicodeScalars.contains(where: breaksLine), "error is not one line: \(describe(description.utf8))")
    require(error.line.map { $0 >= 1 } ?? true, "line \(String(describing: error.line))")
    if built {
        for marker in secretMarkers {
            require(!description.contains(marker), "error shows a secret (\(marker)): \(description)")
        }
    }
}

private func checkApps(_ apps: [AppDefinition]) {
    require(!apps.isEmpty && apps.count <= 1000, "\(apps.count) apps")
    require(Set(apps.map(\.id)).count == apps.count, "ids not unique")
    let topics = apps.compactMap(\.topic)
    require(Set(topics).count == topics.count, "topics not unique")
    for app in apps {
        // Its own id as its topic names the same app: no ambiguity.
        require(!apps.contains { $0.id != app.id && $0.id == app.topic }, "a topic is another app's id")
    }
    require(apps.filter(\.isDefault).count <= 1, "several defaults")
    for app in apps {
        require(isValidID(app.id), "bad id \(describe(app.id.utf8))")
        require(app.topic.map { isName($0, limit: 255) } ?? true, "bad topic")
        require(!app.credentials.isEmpty || app.fcmCredentials != nil || app.isRetired, "app \(app.id) without a credential")
        var shown = [app.id] + (app.topic.map { [$0] } ?? [])
        for credential in app.credentials.values {
            switch credential {
            case .p12File(let path, _):
                shown.append(path)
            case .p12Base64:
                break
            case .p8File(let path, let keyID, let teamID):
                require(app.topic != nil, "token key without a topic")
                require(isName(keyID, limit: 64) && isName(teamID, limit: 64), "bad key or team id")
                shown += [path, keyID, teamID]
            case .p8(_, let keyID, let teamID):
                require(app.topic != nil, "token key without a topic")
                require(isName(keyID, limit: 64) && isName(teamID, limit: 64), "bad key or team id")
                shown += [keyID, teamID]
            }
        }
        require(!shown.contains { $0.contains("⟦") }, "a secret in a field that is not one: \(shown)")
    }
}

private func checkAPIKeys(_ entries: [APIKeyEntry], appIDs: Set<String>) {
    require(entries.count <= 1000, "\(entries.count) API keys")
    require(Set(entries.map(\.name)).count == entries.count, "API key names not unique")
    require(Set(entries.map(\.key)).count == entries.count, "API keys not unique")
    for entry in entries {
        require(isName(entry.name, limit: 64), "bad API key name \(describe(entry.name.utf8))")
        require((16...512).contains(entry.key.bytes.count), "an API key of \(entry.key.bytes.count) bytes")
        if case .only(let ids) = entry.apps {
            require(!ids.isEmpty && Set(ids).count == ids.count, "API key \(entry.name): apps empty or repeated")
            require(ids.allSatisfy { $0 == "default" || appIDs.contains($0) }, "API key \(entry.name): an unknown app")
        }
        if let key = entry.providerKey {
            require(isName(key.keyID, limit: 64) && isName(key.teamID, limit: 64),
                    "API key \(entry.name): a bad jwt-key-id or jwt-team-id")
            require(!key.publicKeyFile.isEmpty, "API key \(entry.name): an empty jwt-public-key")
        }
        if let fingerprint = entry.clientCertificateSHA256 {
            require(fingerprint.count == 32, "API key \(entry.name): a fingerprint of \(fingerprint.count) bytes")
        }
    }
    let keyIDs = entries.compactMap(\.providerKey?.keyID)
    require(Set(keyIDs).count == keyIDs.count, "jwt-key-ids not unique")
    let fingerprints = entries.compactMap(\.clientCertificateSHA256)
    require(Set(fingerprints).count == fingerprints.count, "client certificates not unique")
}

// Reference forms of the rules, written apart from AppsFile's own.
private func isValidID(_ id: String) -> Bool {
    let reserved: Set = ["production", "development", "_health", "message", "api", "default", ".", ".."]
    return (1...64).contains(id.utf8.count) && !reserved.contains(id)
        && id.utf8.allSatisfy { ("a"..."z").contains(Character(Unicode.Scalar($0))) || isDigitOrMark($0) }
}

private func isName(_ name: String, limit: Int) -> Bool {
    (1...limit).contains(name.utf8.count) && name.utf8.allSatisfy {
        ("a"..."z").contains(Character(Unicode.Scalar($0))) || ("A"..."Z").contains(Character(Unicode.Scalar($0)))
            || isDigitOrMark($0)
    }
}

private func isDigitOrMark(_ byte: UInt8) -> Bool {
    ("0"..."9").contains(Character(Unicode.Scalar(byte))) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
        || byte == UInt8(ascii: "-")
}

private func breaksLine(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control, .lineSeparator, .paragraphSeparator: true
    default: false
    }
}

// MARK: - Building a file

private func buildFile(_ input: inout FuzzInput) -> String {
    var lines: [String] = []
    while input.remainingCount > 0 && lines.count < 256 {
        switch input.byte() % 8 {
        case 0, 1:
            lines.append(input.byte() % 4 == 0 ? "[[api-key]]" : "[[app]]")
        case 2:
            lines.append("[app.\(pick(["production", "development", "staging", "production.x"], &input))]")
        case 3, 4:
            lines.append("\(pick(otherKeys, &input)) = \(otherValue(&input))")
        case 5:
            lines.append("\(pick(secretKeys, &input)) = \(secretValue(&input))")
        case 6:
            lines.append(plain(input.bytes(Int(input.byte() % 64))))
        default:
            lines.append("\(quotedKey(&input)) = \(otherValue(&input))")
        }
    }
    return lines.joined(separator: "\n") + "\n"
}

private func pick(_ choices: [String], _ input: inout FuzzInput) -> String {
    choices[Int(input.byte()) % choices.count]
}

/// A value for a key that is not secret: of any TOML type, marker-free.
private func otherValue(_ input: inout FuzzInput) -> String {
    switch input.byte() % 8 {
    case 0, 1: "\"\(pick(vocabulary, &input))\""
    case 2: "\"\(quotedContent(plain(input.bytes(Int(input.byte() % 32)))))\""
    case 3: "\(input.byte() % 100)"
    case 4: input.bool() ? "true" : "false"
    case 5: "[" + (0..<Int(input.byte() % 4)).map { _ in "\"\(pick(vocabulary, &input))\"" }.joined(separator: ", ") + "]"
    case 6: "{ p8-file = \"/k.p8\", key-id = \"\(pick(vocabulary, &input))\" }"
    default: "1979-05-27"
    }
}

/// A secret key's value: valid, from ZSECRET, broken in its string (bad
/// escapes, control characters, no closing quote), or an unquoted number.
private func secretValue(_ input: inout FuzzInput) -> String {
    switch input.byte() % 6 {
    case 0: "\"⟦\(quotedContent(String(decoding: input.bytes(Int(input.byte() % 64)), as: UTF8.self)))\""
    case 1: "\"${ZSECRET}\""
    case 2: "\"⟦\(String(decoding: input.bytes(Int(input.byte() % 64)).filter(staysInString), as: UTF8.self))" + (input.bool() ? "\"" : "")
    case 3: "77777777777777777777777"
    case 4: "777770"
    default: "'''⟦\(String(decoding: input.bytes(Int(input.byte() % 64)).filter { $0 != UInt8(ascii: "'") }, as: UTF8.self))'''"
    }
}

/// A quoted key made of input bytes (an unknown key the errors will quote).
private func quotedKey(_ input: inout FuzzInput) -> String {
    "\"\(quotedContent(plain(input.bytes(Int(input.byte() % 16)))))\""
}

/// Bytes a broken secret may hold and still end on its own line inside its
/// string: no quote, no line end (the string's end is the secret's end).
private func staysInString(_ byte: UInt8) -> Bool {
    byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\n") && byte != UInt8(ascii: "\r")
}

/// Input bytes as marker-free ASCII text: 7 bits, "7" → "8", "Z" → "z" (so
/// not even an escape such as \u27E6 or a ${ZSECRET} can be written).
private func plain(_ bytes: [UInt8]) -> String {
    String(decoding: bytes.map { byte -> UInt8 in
        let ascii = byte & 0x7F
        return ascii == UInt8(ascii: "7") ? UInt8(ascii: "8") : ascii == UInt8(ascii: "Z") ? UInt8(ascii: "z") : ascii
    }, as: UTF8.self)
}


// MARK: - Entry

#if SWIFTPM_FUZZING
// SwiftPM compiles an executable built with --sanitize=fuzzer as a library
// (-parse-as-library), so libFuzzer's own main runs and calls this.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppsFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(data, size)
}
#else
/// Replay: the same checks on each file named, as the fuzzer would run them.
@main
enum AppsFileReplay {
    static func main() { replayInputFiles(tool: "apps-file-fuzzer", fuzzOne) }
}
#endif
