import APNsCore
import Fleet
import Testing

@Suite("A provisioned app's record in Redis: environment line, then the PEM")
struct ProvisionedAppRecordTests {
    @Test("a record decodes back to what was encoded")
    func roundTrip() {
        for environment in [APNsEnvironment.production, .development] {
            let record = ProvisionedAppRecord(environment: environment, pem: Array("-----BEGIN CERTIFICATE-----\nAA\n".utf8))
            #expect(ProvisionedAppRecord.decode(record.encoded) == .success(record))
        }
    }

    @Test("values read back that are no record are refused with a reason that quotes nothing of them",
          arguments: [
              ([UInt8](), ProvisionedAppRecord.DecodeFailure.noEnvironment),
              (Array("production".utf8), .noEnvironment),
              (Array("production\n".utf8), .noPEM),
              (Array("staging\n-----BEGIN".utf8), .unknownEnvironment),
              (Array("Production\n-----BEGIN".utf8), .unknownEnvironment),
              (Array(" production\n-----BEGIN".utf8), .unknownEnvironment),
              ([0xFF, 0xFE, 0x0A, 0x41], .unknownEnvironment),
          ])
    func refused(value: [UInt8], failure: ProvisionedAppRecord.DecodeFailure) {
        #expect(ProvisionedAppRecord.decode(value) == .failure(failure))
        #expect(!failure.description.contains("BEGIN"))
    }

    @Test("a value of exactly the limit decodes and one byte more is refused unread")
    func atTheLimit() {
        let value = Array("development\n".utf8) + [UInt8](repeating: 0x41, count: ProvisionedAppRecord.maximumBytes - 12)
        #expect(ProvisionedAppRecord.decode(value).map(\.environment) == .success(.development))
        #expect(ProvisionedAppRecord.decode(value + [0x41]) == .failure(.tooLarge(ProvisionedAppRecord.maximumBytes + 1)))
    }
}
