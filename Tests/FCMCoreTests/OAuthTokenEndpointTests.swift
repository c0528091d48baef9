// A service account's `token_uri`: the https URIs taken, and the rest.

import FCMCore
import Testing

@Test("token_uri values are read into host, port and target", arguments: [
    ("https://oauth2.googleapis.com/token", "oauth2.googleapis.com", 443, "/token"),
    ("https://accounts.google.com/o/oauth2/token", "accounts.google.com", 443, "/o/oauth2/token"),
    ("HTTPS://OAuth2.GoogleAPIs.com/token", "oauth2.googleapis.com", 443, "/token"),
    ("https://127.0.0.1:8443/token", "127.0.0.1", 8443, "/token"),
    ("https://localhost:1/", "localhost", 1, "/"),
    ("https://emulator.test:65535/v1/token?audience=x&y=%20", "emulator.test", 65_535, "/v1/token?audience=x&y=%20"),
])
func tokenEndpointRead(uri: String, host: String, port: Int, target: String) throws {
    let endpoint = try OAuthTokenEndpoint(uri: uri)
    #expect(endpoint.host == host)
    #expect(endpoint.port == port)
    #expect(endpoint.target == target)
    #expect(endpoint.uri == uri)
    #expect(endpoint.description == uri)
}

@Test("Google's endpoint written out is its URI")
func googleEndpoint() {
    #expect(OAuthTokenEndpoint.google.uri == "https://oauth2.googleapis.com/token")
    #expect(OAuthTokenEndpoint(host: "h.test", port: 8443, target: "/t").uri == "https://h.test:8443/t")
}

@Test("token_uri values that are not https URIs with a host and a path are refused", arguments: [
    ("http://oauth2.googleapis.com/token", "is not an https:// URI"),
    ("oauth2.googleapis.com/token", "is not an https:// URI"),
    ("https://", "is not an https:// URI"),
    ("ftp://x/token", "is not an https:// URI"),
    ("https:///token", "has no valid host name"),
    ("https://user@oauth2.googleapis.com/token", "has no valid host name"),
    ("https://-bad.test/token", "has no valid host name"),
    ("https://[::1]:443/token", "has no valid port (1 to 65535)"),
    ("https://oauth2.googleapis.com", "has no path"),
    ("https://oauth2.googleapis.com:/token", "has no valid port (1 to 65535)"),
    ("https://oauth2.googleapis.com:0/token", "has no valid port (1 to 65535)"),
    ("https://oauth2.googleapis.com:65536/token", "has no valid port (1 to 65535)"),
    ("https://oauth2.googleapis.com:99999999999999999999/token", "has no valid port (1 to 65535)"),
    ("https://oauth2.googleapis.com:-1/token", "has no valid port (1 to 65535)"),
    ("https://oauth2.googleapis.com/token#fragment", "has a character a path or query cannot hold"),
    ("https://oauth2.googleapis.com/to ken", "has a character a path or query cannot hold"),
    ("https://oauth2.googleapis.com/token\r\nHost: evil", "has a character a path or query cannot hold"),
    ("https://oauth2.googleapis.com/tökén", "has a character a path or query cannot hold"),
])
func tokenEndpointRefused(uri: String, reason: String) {
    #expect(throws: OAuthTokenEndpointError.self) { try OAuthTokenEndpoint(uri: uri) }
    do {
        _ = try OAuthTokenEndpoint(uri: uri)
    } catch {
        #expect(error.reason.hasSuffix(reason), "\(error.reason)")
        #expect(!error.reason.contains("\n") && !error.reason.contains("\r"))
    }
}

@Test("a token_uri over 2048 bytes is refused")
func tokenEndpointTooLong() {
    let uri = "https://h.test/" + String(repeating: "a", count: 2034)
    #expect(throws: OAuthTokenEndpointError.self) { try OAuthTokenEndpoint(uri: uri) }
    #expect(throws: Never.self) { try OAuthTokenEndpoint(uri: String(uri.dropLast())) }
}
