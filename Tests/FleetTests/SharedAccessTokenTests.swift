import FCMCore
import Fleet
import Testing

@Suite("The fleet's FCM access token as Redis holds it")
struct SharedAccessTokenTests {
    @Test("a token and a renewal mark read back as written")
    func roundTrip() {
        for value in [SharedAccessToken.token("ya29.c.b0Aa-_~+/x==", keptUntil: 1_700_003_299),
                      .renewing(instance: "relay-1-4242-9f3a")] {
            #expect(SharedAccessToken.decode(value.encoded) == .success(value))
        }
    }

    @Test("a hostile value is refused, saying why, never quoting it", arguments: [
        ("", SharedAccessToken.DecodeFailure.noSeparator),
        ("1700000000", .noSeparator),
        (" ya29.x", .badTime),
        ("-1 ya29.x", .badTime),
        ("1234567890123 ya29.x", .badTime),
        ("17e8 ya29.x", .badTime),
        ("1700000000 ", .badToken),
        ("1700000000 ya29 x", .badToken),
        ("1700000000 ya29.x\r\nX-Injected: 1", .badToken),
        ("1700000000 =ya29", .badToken),
        ("1700000000 ya29=x", .badToken),
        ("renewing ", .badInstance),
        ("renewing a b", .badInstance),
        ("renewing " + String(repeating: "a", count: 129), .badInstance),
    ])
    func refused(value: String, failure: SharedAccessToken.DecodeFailure) {
        #expect(SharedAccessToken.decode(Array(value.utf8)) == .failure(failure))
        #expect(!failure.description.contains("ya29"))
    }

    @Test("a value longer than any token is refused before it is read")
    func tooLarge() {
        let bytes = Array(("1700000000 " + String(repeating: "a", count: OAuthAccessToken.maxBytes + 32)).utf8)
        #expect(SharedAccessToken.decode(bytes) == .failure(.tooLarge(bytes.count)))
    }
}
