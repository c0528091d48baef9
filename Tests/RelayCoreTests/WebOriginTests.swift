import Testing
@testable import RelayCore

struct WebOriginTests {
    @Test("an origin is scheme and host in lower case, a port only when it is not the scheme's default",
          arguments: [
              ("https://relay.example", "https://relay.example"),
              ("https://relay.example/", "https://relay.example"),
              ("HTTPS://Relay.EXAMPLE:443", "https://relay.example"),
              ("https://relay.example:0443/", "https://relay.example"),
              ("https://relay.example:", "https://relay.example"),
              ("https://relay.example:8443", "https://relay.example:8443"),
              ("https://relay.example:80", "https://relay.example:80"),
              ("http://relay.example:80", "http://relay.example"),
              ("http://relay.example:443", "http://relay.example:443"),
              ("https://relay.example/relay-to/production/abc?x=1#y", "https://relay.example"),
              ("https://relay.example?x", "https://relay.example"),
              ("https://[::1]:8443", "https://[::1]:8443"),
              ("https://[::1]", "https://[::1]"),
              ("https://[::1]:443/", "https://[::1]"),
              ("wss://relay.example:443", "wss://relay.example:443"),
              ("https://relay.example:00", "https://relay.example:0"),
          ])
    func origins(text: String, origin: String) {
        #expect(vapidOrigin(of: text) == origin)
        // The origin of an origin is itself.
        #expect(vapidOrigin(of: origin) == origin)
    }

    @Test("text that names no origin has none", arguments: [
        "", "relay.example", "//relay.example", "https:relay.example", "https:/relay.example", "https://",
        "https:///path", "https://user@relay.example", "https://relay.example:84a3", "https://:443",
        "1https://relay.example", "ht tp://relay.example", "://relay.example",
    ])
    func notOrigins(text: String) {
        #expect(vapidOrigin(of: text) == nil)
    }
}
