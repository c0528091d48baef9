import APNsCore
import Foundation
import TestSupport
import Testing

struct APNsIDTests {
    @Test("an APNs id is the two random words, least significant byte first, with version and variant set")
    func apnsIDLayout() {
        var words = FixedRandom(values: [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210])
        #expect(makeAPNsID(random: &words) == "EFCDAB89-6745-4301-9032-547698BADCFE")
        var zeros = FixedRandom(values: [0, 0])
        #expect(makeAPNsID(random: &zeros) == "00000000-0000-4000-8000-000000000000")
        var ones = FixedRandom(values: [.max, .max])
        #expect(makeAPNsID(random: &ones) == "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF")
    }

    @Test("makes uppercase version-4 UUIDs")
    func apnsIDs() throws {
        var generator = SeededGenerator(seed: 1)
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = makeAPNsID(random: &generator)
            let uuid = try #require(UUID(uuidString: id))
            #expect(uuid.uuidString == id)
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36)
            #expect(bytes[14] == UInt8(ascii: "4"))
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "A"), UInt8(ascii: "B")].contains(bytes[19]))
            seen.insert(id)
        }
        #expect(seen.count == 1000)
    }
}
