import Testing
@testable import APNsEmulator

@Suite("Fault tokens")
struct FaultInjectionTests {
    @Test("the table covers every row of WIRE.md §3 that APNs can cause, codes 1…22 in order")
    func tableShape() {
        #expect(APNsFaultToken.table.map(\.code) == Array(1...22))
        let actions = APNsFaultToken.table.map(\.action)
        for expected: APNsEmulatorAction in [
            .reject(status: 410, reason: .unregistered), .reject(status: 400, reason: .badDeviceToken),
            .reject(status: 400, reason: .deviceTokenNotForTopic), .reject(status: 413, reason: .payloadTooLarge),
            .reject(status: 429, reason: .tooManyRequests), .reject(status: 400, reason: .badPriority),
            .reject(status: 403, reason: .badCertificate), .reject(status: 403, reason: .expiredProviderToken),
            .reject(status: 403, reason: .invalidProviderToken), .reject(status: 404, reason: .badPath),
            .reject(status: 405, reason: .methodNotAllowed), .reject(status: 500, reason: .internalServerError),
            .reject(status: 503, reason: .serviceUnavailable), .noAnswer, .resetStream, .dropConnection,
            .rejectRetryingAfter(status: 503, reason: .serviceUnavailable, seconds: 3),
        ] {
            #expect(actions.contains(expected), "\(expected)")
        }
    }

    @Test("token(code:) makes a 64-digit hex token that selects its own row", arguments: APNsFaultToken.table.map(\.code))
    func roundTrip(code: UInt8) {
        for filler: UInt32 in [0, 1, 0xffff_ffff] {
            let token = APNsFaultToken.token(code: code, filler: filler)
            #expect(token.utf8.count == 64)
            #expect(APNsRequestValidator.isDeviceToken(token[...].utf8))
            #expect(APNsFaultToken.action(forToken: token[...].utf8) == APNsFaultToken.action(forCode: code))
            #expect(APNsFaultToken.action(forToken: token.uppercased()[...].utf8) == APNsFaultToken.action(forCode: code))
        }
    }

    @Test("ordinary, short, unknown-code and near-miss tokens select nothing",
          arguments: [String(repeating: "ab", count: 32), "fa11fa11", "fa11fa110", "fa11fa1100" + String(repeating: "0", count: 54),
                      "fa11fa11ff" + String(repeating: "0", count: 54), "fa11fa1g01" + String(repeating: "0", count: 54),
                      "0a11fa1101" + String(repeating: "0", count: 54), "fa11fa11z1" + String(repeating: "0", count: 54)])
    func noFault(token: String) {
        #expect(APNsFaultToken.action(forToken: token[...].utf8) == nil)
    }

    @Test("reject(reason) uses Apple's documented status, 400 for an undocumented reason")
    func documentedStatus() {
        #expect(APNsEmulatorAction.reject(.unregistered) == .reject(status: 410, reason: .unregistered))
        #expect(APNsEmulatorAction.reject(.unknown("Teapot")) == .reject(status: 400, reason: .unknown("Teapot")))
    }
}
