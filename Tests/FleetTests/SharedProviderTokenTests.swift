import Fleet
import Testing

@Suite("A key's provider token as a fleet shares it: iat, a space, the JWT")
struct SharedProviderTokenTests {
    @Test("a shared token decodes back to what was encoded")
    func roundTrip() {
        let shared = SharedProviderToken(issuedAt: 1_700_000_000, token: "eyJh.eyJp.c2ln-_")
        #expect(String(decoding: shared.encoded, as: UTF8.self) == "1700000000 eyJh.eyJp.c2ln-_")
        #expect(SharedProviderToken.decode(shared.encoded) == .success(shared))
    }

    @Test("values read back that are no shared token are refused", arguments: [
        ("", SharedProviderToken.DecodeFailure.noSeparator),
        ("1700000000", .noSeparator),
        (" eyJh.eyJp.c2ln", .badIssuedAt),
        ("-1 eyJh.eyJp.c2ln", .badIssuedAt),
        ("17e8 eyJh.eyJp.c2ln", .badIssuedAt),
        ("1234567890123 eyJh.eyJp.c2ln", .badIssuedAt),
        ("1700000000 ", .badToken),
        ("1700000000 eyJh.eyJp", .badToken),
        ("1700000000 eyJh.eyJp.c2ln.more", .badToken),
        ("1700000000 eyJh..c2ln", .badToken),
        ("1700000000 eyJh.eyJp.c2l=", .badToken),
        ("1700000000 eyJh.eyJp.c2ln ", .badToken),
        ("1700000000 eyJh.eyJp.c2ln\n", .badToken),
        ("1700000000  eyJh.eyJp.c2ln", .badToken),
    ])
    func refused(value: String, failure: SharedProviderToken.DecodeFailure) {
        #expect(SharedProviderToken.decode(Array(value.utf8)) == .failure(failure))
    }

    @Test("a value over the limit is refused unread")
    func tooLarge() {
        let value = Array("1700000000 ".utf8) + [UInt8](repeating: 0x41, count: SharedProviderToken.maximumBytes)
        #expect(SharedProviderToken.decode(value) == .failure(.tooLarge(SharedProviderToken.maximumBytes + 11)))
    }
}
