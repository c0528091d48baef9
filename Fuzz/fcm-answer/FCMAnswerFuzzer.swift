// Fuzz target fcm-answer: what FCMCore reads from outside, which anyone
// between the relay and Google, or a broken file, could have shaped: FCM's
// answer to a send, the token endpoint's answer, and a service account's
// file.
//
// Input: [mode][…]. mode % 4:
// - 0: a send's answer: [status][Retry-After][refreshed] then the body.
// - 1: the token endpoint's answer: [status] then the body.
// - 2: the rest is a service account's file.
// - 3: a console-made file with members replaced: repeated [member][kind]
//   [length][value] (kind even: the value as a JSON string; odd: as raw
//   JSON text), so the fuzzer works on the fields rather than the syntax.
//
// Checked (a trap on violation): never a crash; the same input, the same
// result; a 200 is sent, any other status failed with that status; a
// token is dead only on a 4xx whose FcmError says UNREGISTERED or
// SENDER_ID_MISMATCH, or INVALID_ARGUMENT with `message.token` named (a
// BadRequest field violation, or FCM's documented message), read here
// again on its own; a refresh never follows a refresh; a 503 waits the
// Retry-After or 60 s; every detail and description is one line. A token
// answer is a token only on a 200, with a bearer token of at most 4096
// bytes, kept 1 s to its lifetime and at most five minutes less than it,
// its description never showing it; a refusal only with a string `error`.
// A service account read obeys the file's rules and its assertion is JWT
// parts of strict JSON naming it; a refused file's reason is one line; no
// description shows a marker the `private_key` holds (unless another
// string of the file holds it too, which a reason may quote).
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md): there, with
// SWIFTPM_FUZZING defined, libFuzzer's main calls LLVMFuzzerTestOneInput.
// A plain `swift build` makes a replay tool of it instead:
// `fcm-answer-fuzzer <input file>…` runs the same checks on each file.

import Base64URL
import FCMCore
import FuzzSupport
import JSON

/// Statuses FCM and the token endpoint send, and some they do not.
private let statuses = [200, 400, 401, 403, 404, 429, 500, 502, 503, 504, 201, 204, 301, 413, 0, 599, 600, 999]

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    switch input.byte() % 4 {
    case 0:
        let status = statuses[Int(input.byte()) % statuses.count]
        let retryByte = input.byte()
        let retryAfter: Int? = retryByte == 0 ? nil : Int(retryByte) * 15
        let refreshed = input.bool()
        checkSendAnswer(status: status, body: input.rest(), retryAfter: retryAfter, refreshed: refreshed)
    case 1:
        checkTokenAnswer(status: statuses[Int(input.byte()) % statuses.count], body: input.rest())
    case 2:
        checkServiceAccount(input.rest())
    default:
        checkServiceAccount(splicedFile(&input))
    }
    return 0
}

private func oneLine(_ text: String, _ what: String) {
    require(!text.isEmpty, "\(what): empty")
    require(!text.utf8.contains(UInt8(ascii: "\n")) && !text.utf8.contains(UInt8(ascii: "\r")), "\(what): two lines: \(text)")
}

// MARK: A send's answer

/// What the body says, read here on its own: the FcmError's code, and
/// whether the token is named.
private func independentReading(_ body: [UInt8]) -> (fcmErrorCode: String?, namesToken: Bool) {
    guard body.count <= 16_384, let document = try? parseStrictJSON(body), case .object? = document["error"] else {
        return (nil, false)
    }
    let error = document["error"]!
    var code: String? = nil
    var names = error["message"] == .string("The registration token is not a valid FCM registration token")
    if case .array(let details)? = error["details"] {
        for detail in details {
            guard case .string(let type)? = detail["@type"] else { continue }
            if type.hasSuffix("/google.firebase.fcm.v1.FcmError"), case .string(let text)? = detail["errorCode"] { code = text }
            if type.hasSuffix("/google.rpc.BadRequest"), case .array(let violations)? = detail["fieldViolations"] {
                for violation in violations where violation["field"] == .string("message.token") { names = true }
            }
        }
    }
    return (code, names)
}

private func checkSendAnswer(status: Int, body: [UInt8], retryAfter: Int?, refreshed: Bool) {
    let answer = FCMSendAnswer(status: status, body: body)
    require(answer == FCMSendAnswer(status: status, body: body), "the same answer read twice differs")
    let verdict = FCMVerdict(.answered(answer, retryAfterSeconds: retryAfter), afterTokenRefresh: refreshed)
    trace("send \(status): \(answer) → \(verdict)")
    guard case .failed(let error) = answer else {
        require(status == 200, "a \(status) was read as sent")
        require(verdict == .delivered, "a 200 is \(verdict)")
        return
    }
    require(status != 200, "a 200 was read as failed")
    require(error.httpStatus == status, "the status \(status) became \(error.httpStatus)")
    oneLine(error.description, "an error's description")
    let reading = independentReading(body)
    require(error.namesToken == reading.namesToken, "namesToken \(error.namesToken), read again \(reading.namesToken)")
    if let code = reading.fcmErrorCode {
        require(error.reason.text == code, "the FcmError says \(code), the reason is \(error.reason.text)")
    }
    let dead = (400...499).contains(status)
        && (reading.fcmErrorCode == "UNREGISTERED" || reading.fcmErrorCode == "SENDER_ID_MISMATCH"
            || (error.reason == .invalidArgument && reading.namesToken))
    switch verdict {
    case .tokenDead(let reason):
        require(dead, "a dead token for \(status) \(error)")
        require(reason == error.reason, "a dead token for \(reason), the answer said \(error.reason)")
    case .retryLater(let seconds, let detail):
        // Without a Retry-After: a quota's minute after a 429 (or a quota's
        // code), FCM's 10 s back-off floor after a 5xx (or its codes).
        let quota = error.reason == .quotaExceeded || error.reason == .resourceExhausted
        let unavailable = error.reason == .unavailable || error.reason == .internalError
        let ownWait = quota || (!unavailable && status == 429)
            ? FCMVerdict.defaultRetryAfterSeconds : FCMVerdict.unavailableRetryAfterSeconds
        require(seconds == (retryAfter ?? ownWait), "a wait of \(seconds) s for a Retry-After of \(String(describing: retryAfter))")
        oneLine(detail, "a retry's detail")
    case .refreshAccessTokenAndResend:
        require(!refreshed, "a refresh after a refresh")
        require(status == 401 || status == 403, "a refresh after a \(status)")
    case .credentialsRejected(let detail), .failed(let detail):
        oneLine(detail, "a failure's detail")
    case .delivered, .timedOut:
        require(false, "a failed answer is \(verdict)")
    }
    if case .tokenDead = verdict {} else { require(!dead, "\(status) \(error) is not a dead token but \(verdict)") }
    require(verdict.webPushStatus.map { $0 >= 500 || $0 == 410 } ?? true, "a failure answered \(String(describing: verdict.webPushStatus))")
    _ = fcmMessageName(body)
}

// MARK: The token endpoint's answer

private func checkTokenAnswer(status: Int, body: [UInt8]) {
    let answer = OAuthTokenAnswer(status: status, body: body)
    trace("token \(status): \(answer)")
    require(answer == OAuthTokenAnswer(status: status, body: body), "the same token answer read twice differs")
    switch answer {
    case .token(let token):
        require(status == 200, "a token from a \(status)")
        let bytes = Array(token.value.utf8)
        require(!bytes.isEmpty && bytes.count <= 4096, "a token of \(bytes.count) bytes")
        let digits = bytes.prefix { $0 != UInt8(ascii: "=") }
        require(!digits.isEmpty && bytes.dropFirst(digits.count).allSatisfy { $0 == UInt8(ascii: "=") }
                    && digits.allSatisfy { base64URLAlphabet.contains($0) || Array(".~+/".utf8).contains($0) },
                "a token that is no b64token: \(describe(bytes))")
        require((1...86_400).contains(token.expiresInSeconds), "a lifetime of \(token.expiresInSeconds) s")
        require(token.keepSeconds >= 1 && token.keepSeconds <= token.expiresInSeconds
                    && token.keepSeconds >= token.expiresInSeconds - 300,
                "kept \(token.keepSeconds) s of \(token.expiresInSeconds)")
        if bytes.count >= 8 { require(!containsBytes(token.description, token.value), "a description shows the token") }
    case .refused(let refusal):
        guard let fields = try? parseStrictJSON(body), case .string(let code)? = fields["error"] else {
            require(false, "a refusal without a string error")
            return
        }
        require(refusal.code.text == code && refusal.status == status, "a refusal of \(code), read as \(refusal)")
        oneLine(refusal.description, "a refusal's description")
    case .unavailable(let answered):
        require(answered == status && (status == 429 || (500...599).contains(status)), "unavailable after a \(status)")
    case .malformed(let reason):
        oneLine(reason, "a malformed answer's reason")
    }
    if status != 200, case .token = answer { require(false, "a token from a \(status)") }
    if let account = fuzzAccount, let verdict = FCMVerdict(answer, account: account) {
        switch verdict {
        case .credentialsRejected(let detail), .failed(let detail), .retryLater(_, let detail): oneLine(detail, "a token verdict")
        default: require(false, "a token request came to \(verdict)")
        }
    } else if case .token = answer {} else {
        require(fuzzAccount == nil, "a token request without a token came to no verdict")
    }
}

// MARK: A service account's file

/// Put into every key the fuzzer splices in, and into the seeds' keys: a
/// description that shows it shows the key.
private let keyMarker = "Zq9KeyMarker7Xw"

/// The members of a console-made file, the key a fake of the right shape
/// holding the marker.
private let consoleMembers: [(String, String)] = [
    ("type", "service_account"), ("project_id", "toot-relay-fuzz"),
    ("private_key_id", "0123456789abcdef0123456789abcdef01234567"),
    ("private_key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\(keyMarker)0123456789abcdef\nQUJDREVGR0g=\n-----END PRIVATE KEY-----\n"),
    ("client_email", "firebase-adminsdk-x@toot-relay-fuzz.iam.gserviceaccount.com"), ("client_id", "1234567890"),
    ("token_uri", "https://oauth2.googleapis.com/token"),
]

private func consoleFile(_ members: [(String, String, Bool)]) -> [UInt8] {
    let text = members.map { name, value, raw in "\"\(name)\": " + (raw ? value : "\"\(quotedContent(value))\"") }
        .joined(separator: ",\n  ")
    return Array(("{\n  " + text + "\n}\n").utf8)
}

private let fuzzAccount: FCMServiceAccount? = try? FCMServiceAccount(json: consoleFile(consoleMembers.map { ($0.0, $0.1, false) }))

private func splicedFile(_ input: inout FuzzInput) -> [UInt8] {
    var members = consoleMembers.map { ($0.0, $0.1, false) }
    while input.remainingCount > 0 && !members.isEmpty {
        let choice = Int(input.byte()) % 16
        let raw = input.bool()
        var value = String(decoding: input.bytes(Int(input.byte()) | Int(input.byte() & 0x3F) << 8), as: UTF8.self)
        if choice < members.count {
            if members[choice].0 == "private_key" {
                // The marker in the middle of whatever the key became.
                let half = value.index(value.startIndex, offsetBy: value.count / 2)
                value = String(value[..<half]) + keyMarker + String(value[half...])
            }
            members[choice].1 = value
            members[choice].2 = raw
        } else if choice < 12 {
            members.remove(at: choice % members.count)
        } else {
            members.append((["universe_domain", "auth_uri", "type", "private_key"][choice % 4], value, raw))
        }
    }
    return consoleFile(members)
}

/// Whether a string or name of `value`, but the top-level private_key's
/// value, holds the marker.
private func markerElsewhere(_ value: JSONValue, isKey: Bool = false) -> Bool {
    switch value {
    case .string(let text): return !isKey && containsBytes(text, keyMarker)
    case .array(let elements): return elements.contains { markerElsewhere($0) }
    case .object(let members):
        return members.contains { containsBytes($0.name, keyMarker) || markerElsewhere($0.value) }
    case .null, .bool, .number: return false
    }
}

private func checkServiceAccount(_ file: [UInt8]) {
    var key: [UInt8]? = nil
    var quotable = false
    if let document = try? parseStrictJSON(file) {
        if case .object(let members) = document {
            // The parser refuses duplicate names: at most one private_key.
            quotable = members.contains { member in
                containsBytes(member.name, keyMarker) || markerElsewhere(member.value, isKey: member.name == "private_key")
            }
        } else {
            quotable = markerElsewhere(document)
        }
        if case .string(let text)? = document["private_key"] { key = Array(text.utf8) }
    }
    func checkNoKey(_ text: String) {
        require(quotable || !containsBytes(text, keyMarker), "a description shows the key: \(text)")
    }
    do {
        let account = try FCMServiceAccount(json: file)
        trace("account: \(account)")
        require((try? FCMServiceAccount(json: file)) == account, "the same file read twice differs")
        require(account.privateKey.pem == key, "the key read is not the file's")
        var dumped = ""
        dump(account, to: &dumped)
        for text in [account.description, String(describing: account.privateKey), String(reflecting: account), dumped] {
            checkNoKey(text)
        }
        require(account.projectID.utf8.allSatisfy { Array("abcdefghijklmnopqrstuvwxyz0123456789-.:".utf8).contains($0) },
                "a project id \(account.projectID)")
        require(account.clientEmail.utf8.filter { $0 == UInt8(ascii: "@") }.count == 1, "an address \(account.clientEmail)")
        require((1...65_535).contains(account.tokenEndpoint.port) && account.tokenEndpoint.target.hasPrefix("/"),
                "a token endpoint \(account.tokenEndpoint)")
        checkAssertion(account)
    } catch {
        trace("refused: \(error)")
        oneLine(error.description, "a refused file's reason")
        checkNoKey(error.description)
    }
}

private func checkAssertion(_ account: FCMServiceAccount) {
    let assertion = ServiceAccountAssertion(account: account, issuedAt: 1_700_000_000)
    let parts = assertion.signingInput.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    require(parts.count == 2, "a signing input of \(parts.count) parts")
    guard let header = try? parseStrictJSON(base64URLDecode(String(decoding: parts[0], as: UTF8.self))),
          let claims = try? parseStrictJSON(base64URLDecode(String(decoding: parts[1], as: UTF8.self))) else {
        require(false, "the assertion's parts are not JSON")
        return
    }
    require(header["kid"] == .string(account.privateKeyID) && header["alg"] == .string("RS256"), "the header")
    require(claims["iss"] == .string(account.clientEmail) && claims["aud"] == .string(account.tokenEndpoint.uri)
                && claims["exp"] == .number("1700003600"), "the claims")
    let body = assertion.tokenRequestBody(signature: [0xFF, 0x00])
    require(body.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "a form body with a blank or control byte")
}

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFCMAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum FCMAnswerReplay {
    static func main() { replayInputFiles(tool: "fcm-answer-fuzzer", fuzzOne) }
}
#endif
