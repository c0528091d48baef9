// Who may send through `/3/device/`, and the request's environment and app
// topics: every answer the relay decides itself, table by table (the
// signature check injected: a stand-in accepting the key id as signature).

import APNsCore
import Base64URL
import HTTPCore
import ProviderAPI
import RelayCore
import Testing

private func token(kid: String = "KEY1", team: String = "TEAM1", iat: Int = now, signedBy: String? = nil) -> String {
    let header = base64URLEncode(Array(#"{"alg":"ES256","kid":"\#(kid)"}"#.utf8))
    let claims = base64URLEncode(Array(#"{"iss":"\#(team)","iat":\#(iat)}"#.utf8))
    return "bearer \(header).\(claims).\(base64URLEncode(Array((signedBy ?? kid).utf8)))"
}

private let now = 1_800_000_000
private let apiKey = "proxy-test-key-0123456789"
private let certificate: [UInt8] = Array(repeating: 0xab, count: 32)

private func key(_ keyID: String, team: String, name: String, apps: APIKeyApps) -> ProxyTokenKey {
    ProxyTokenKey(keyID: keyID, teamID: team, name: name, apps: apps) { _, signature in signature == Array(keyID.utf8) }
}

private let credentials = ProxyCredentials(
    tokenKeys: [key("KEY1", team: "TEAM1", name: "token KEY1", apps: .only(["a", "b"])),
                key("KEY2", team: "TEAM2", name: "backend", apps: .only(["c"]))],
    certificates: [ProxyCertificate(sha256: certificate, name: "certificate of a", apps: .only(["a"]))])

private func authorize(_ authorization: String?, certificate: [UInt8]? = nil, keyed: Bool = true)
    throws -> Result<APIAuthorization, APNsProxyRefusal> {
    let keyring = keyed ? try APIKeyring([APIKeyEntry(name: "all", key: try APIKey(validating: apiKey), apps: .all)])
        : .empty
    return authorizeProxyRequest(authorization: authorization, clientCertificateSHA256: certificate, keyring: keyring,
                                 credentials: credentials, verifier: credentials.makeVerifier(), now: now)
}

@Test("who sends: a certificate, the API key, a provider token, each with its apps", arguments: [
    (nil, certificate, APIAuthorization.key(name: "certificate of a", apps: .only(["a"]))),
    ("bearer garbage", certificate, .key(name: "certificate of a", apps: .only(["a"]))),
    ("Bearer \(apiKey)", nil, .key(name: "all", apps: .all)),
    (token(), nil, .key(name: "token KEY1", apps: .only(["a", "b"]))),
    (token(kid: "KEY2", team: "TEAM2", iat: now - 3600), nil, .key(name: "backend", apps: .only(["c"]))),
    (token(iat: now + 300), nil, .key(name: "token KEY1", apps: .only(["a", "b"]))),
] as [(String?, [UInt8]?, APIAuthorization)])
func proxyCallers(authorization: String?, certificate: [UInt8]?, expected: APIAuthorization) throws {
    #expect(try authorize(authorization, certificate: certificate) == .success(expected))
}

@Test("APNs' 403 reasons for a request without a usable credential", arguments: [
    (nil, APNsReason.missingProviderToken), ("", .missingProviderToken), ("  ", .missingProviderToken),
    ("bearer not-a-key-nor-a-token", .invalidProviderToken), ("Basic Zm9vOmJhcg==", .invalidProviderToken),
    (token(kid: "NOKEY"), .invalidProviderToken), (token(team: "TEAM2"), .invalidProviderToken),
    (token(signedBy: "KEY2"), .invalidProviderToken), (token(iat: now + 301), .invalidProviderToken),
    (token(iat: now - 3601), .expiredProviderToken),
] as [(String?, APNsReason)])
func proxyRefusals(authorization: String?, reason: APNsReason) throws {
    let refused = try authorize(authorization, certificate: [0x01])
    #expect(refused == .failure(APNsProxyRefusal(reason)))
    if case .failure(let refusal) = refused { #expect(refusal.status == 403) }
}

@Test("an API without keys stays open, but a provider token is still checked", arguments: [
    (nil, Result<APIAuthorization, APNsProxyRefusal>.success(.key(name: "-", apps: .all))),
    ("bearer anything", .success(.key(name: "-", apps: .all))),
    (token(), .success(.key(name: "token KEY1", apps: .only(["a", "b"])))),
    (token(kid: "NOKEY"), .failure(APNsProxyRefusal(.invalidProviderToken))),
    (token(iat: now - 3601), .failure(APNsProxyRefusal(.expiredProviderToken))),
])
func openAPI(authorization: String?, expected: Result<APIAuthorization, APNsProxyRefusal>) throws {
    #expect(try authorize(authorization, keyed: false) == expected)
}

@Test("the environment: an APNs host names it, else the path does", arguments: [
    ("api.push.apple.com", APNsEnvironment.development, APNsEnvironment.production),
    ("api.push.apple.com:443", .development, .production),
    ("API.Push.Apple.Com", .development, .production),
    ("api.sandbox.push.apple.com", .production, .development),
    ("api.sandbox.push.apple.com:2197", .production, .development),
    ("api.development.push.apple.com", .production, .development),
    ("relay.example", .production, .production),
    ("relay.example", .development, .development),
    ("127.0.0.1:8088", .development, .development),
    ("api.push.apple.com.evil.example", .development, .development),
    ("api.push.apple.com:x", .development, .development),
] as [(String, APNsEnvironment, APNsEnvironment)])
func environments(host: String, path: APNsEnvironment, expected: APNsEnvironment) {
    #expect(proxyEnvironment(host: host, path: path) == expected)
    #expect(proxyEnvironment(host: nil, path: path) == path)
}

@Test("the app's topics: the topic, then the bundle id its push type's suffix carries", arguments: [
    ("com.example.app", "alert", ["com.example.app"]),
    ("com.example.app.voip", "voip", ["com.example.app.voip", "com.example.app"]),
    ("com.example.app.push-type.liveactivity", "liveactivity",
     ["com.example.app.push-type.liveactivity", "com.example.app"]),
    ("com.example.app.voip", "alert", ["com.example.app.voip"]),
    ("com.example.app.voip-ptt", nil, ["com.example.app.voip-ptt", "com.example.app"]),
] as [(String, String?, [String])])
func appTopics(topic: String, pushType: String?, expected: [String]) {
    #expect(proxyAppTopics(topic: topic, pushType: pushType) == expected)
}

@Test("a refusal's apns-id is the client's when well-formed, else the relay's")
func answerIDs() {
    let sent = "EABEAE54-14A8-11E5-B60B-1697F925EC7B"
    #expect(proxyAnswerID(headers: HTTPHeaders([("apns-id", sent)]), generated: "generated") == sent)
    #expect(proxyAnswerID(headers: HTTPHeaders([("apns-id", "nope")]), generated: "generated") == "generated")
    #expect(proxyAnswerID(headers: HTTPHeaders([("apns-id", sent), ("apns-id", sent)]), generated: "g") == "g")
    #expect(proxyAnswerID(headers: HTTPHeaders([]), generated: "generated") == "generated")
}
