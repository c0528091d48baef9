import APNsCore
import HTTPCore
@testable import RelayCore
import Testing

struct OutcomeCase: Sendable, CustomTestStringConvertible {
    var outcome: DeliveryOutcome
    var status: Int
    var retryAfter: String?
    var credentialsRejected: Bool = false
    var testDescription: String { "\(outcome) → \(status)" }
}

struct StatusMappingTests {
    /// Every row of WIRE.md §3.
    static let rows: [OutcomeCase] = [
        OutcomeCase(outcome: .apns(status: 410, reason: .unregistered, apnsID: nil), status: 410),
        OutcomeCase(outcome: .apns(status: 410, reason: .expiredToken, apnsID: nil), status: 410),
        OutcomeCase(outcome: .apns(status: 410, reason: nil, apnsID: nil), status: 410),
        OutcomeCase(outcome: .apns(status: 400, reason: .badDeviceToken, apnsID: nil), status: 410),
        OutcomeCase(outcome: .apns(status: 400, reason: .deviceTokenNotForTopic, apnsID: nil), status: 410),
        OutcomeCase(outcome: .apns(status: 413, reason: .payloadTooLarge, apnsID: nil), status: 502),
        OutcomeCase(outcome: .apns(status: 429, reason: .tooManyRequests, apnsID: nil), status: 503, retryAfter: "60"),
        OutcomeCase(outcome: .apns(status: 400, reason: .badTopic, apnsID: nil), status: 502),
        OutcomeCase(outcome: .apns(status: 400, reason: nil, apnsID: nil), status: 502),
        OutcomeCase(outcome: .apns(status: 400, reason: .unknown("SomethingNew"), apnsID: nil), status: 502),
        OutcomeCase(outcome: .apns(status: 403, reason: .invalidProviderToken, apnsID: nil), status: 502,
                    credentialsRejected: true),
        OutcomeCase(outcome: .apns(status: 403, reason: nil, apnsID: nil), status: 502, credentialsRejected: true),
        // A key scoped to the other environment: the relay's credential is
        // wrong for this host, never the subscription's fault.
        OutcomeCase(outcome: .apns(status: 403, reason: APNsReason(rawValue: "BadEnvironmentKeyInToken"), apnsID: nil),
                    status: 502, credentialsRejected: true),
        OutcomeCase(outcome: .apns(status: 404, reason: .badPath, apnsID: nil), status: 502),
        OutcomeCase(outcome: .apns(status: 405, reason: .methodNotAllowed, apnsID: nil), status: 502),
        OutcomeCase(outcome: .apns(status: 500, reason: .internalServerError, apnsID: nil), status: 503,
                    retryAfter: "10"),
        OutcomeCase(outcome: .apns(status: 503, reason: .serviceUnavailable, apnsID: nil), status: 503,
                    retryAfter: "10"),
        OutcomeCase(outcome: .apns(status: 503, reason: .shutdown, apnsID: nil), status: 503, retryAfter: "10"),
        OutcomeCase(outcome: .apns(status: 429, reason: .tooManyProviderTokenUpdates, apnsID: nil), status: 503,
                    retryAfter: "60"),
        OutcomeCase(outcome: .apns(status: 202, reason: nil, apnsID: nil), status: 502),
        OutcomeCase(outcome: .apns(status: 502, reason: nil, apnsID: nil), status: 502),
        OutcomeCase(outcome: .answerTimedOut, status: 504),
        OutcomeCase(outcome: .connectFailed("connection refused"), status: 502),
        OutcomeCase(outcome: .tlsFailed("certificate verify failed"), status: 502),
        OutcomeCase(outcome: .streamFailed("RST_STREAM INTERNAL_ERROR"), status: 502),
        OutcomeCase(outcome: .allConnectionsDown, status: 503, retryAfter: "5"),
        OutcomeCase(outcome: .overloaded, status: 503, retryAfter: "1"),
    ]

    @Test("maps every outcome of the design table", arguments: rows)
    func mapping(_ row: OutcomeCase) {
        let response = relayResponse(for: row.outcome, notification: "ID", ttl: 60)
        #expect(response.status == row.status)
        #expect(response.headers.first { $0.name == "Retry-After" }?.value == row.retryAfter)
        #expect(response.credentialsRejected == row.credentialsRejected)
        let lines = response.body.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty && !lines[0].isEmpty, "one line: \(response.body)")
        #expect(response.headers.first { $0.name == "Content-Type" }?.value == "text/plain; charset=utf-8")
    }

    @Test("answers APNs 200 with 201, Location and TTL")
    func success() {
        #expect(relayResponse(for: .apns(status: 200, reason: nil, apnsID: nil), notification: "ABC", ttl: 172800)
            == RelayResponse(status: 201, headers: [
                HTTPField(name: "Location", value: "/relay-to/message/ABC"), HTTPField(name: "TTL", value: "172800"),
            ]))
        let echoed = relayResponse(for: .apns(status: 200, reason: nil, apnsID: "FROM-APNS"), notification: "OURS",
                                   ttl: 0)
        #expect(echoed.headers.first { $0.name == "Location" }?.value == "/relay-to/message/FROM-APNS")
        #expect(echoed.headers.first { $0.name == "TTL" }?.value == "0")
        #expect(echoed.body.isEmpty)
    }

    @Test("APNs' Retry-After lengthens the relay's own, never shortens it, and adds none where the relay has none",
          arguments: [
              (DeliveryOutcome.apns(status: 503, reason: .serviceUnavailable, apnsID: nil), 120, "120"),
              (.apns(status: 503, reason: .serviceUnavailable, apnsID: nil), 2, "10"),
              (.apns(status: 429, reason: .tooManyRequests, apnsID: nil), 600, "600"),
              (.apns(status: 410, reason: .unregistered, apnsID: nil), 120, nil),
              (.apns(status: 200, reason: nil, apnsID: nil), 120, nil),
          ] as [(DeliveryOutcome, Int, String?)])
    func apnsRetryAfter(outcome: DeliveryOutcome, apnsRetryAfter: Int, expected: String?) {
        let response = relayResponse(for: outcome, notification: "ID", ttl: 60, apnsRetryAfter: apnsRetryAfter)
        #expect(response.headers.first { $0.name == "Retry-After" }?.value == expected)
        #expect(response.status == relayResponse(for: outcome, notification: "ID", ttl: 60).status)
    }

    /// What the relay answers for each reason arriving with its documented status.
    static func expectedStatus(for reason: APNsReason) -> Int {
        switch reason {
        case .badDeviceToken, .deviceTokenNotForTopic, .expiredToken, .unregistered: 410
        case .tooManyRequests: 503
        case .internalServerError, .serviceUnavailable, .shutdown, .tooManyProviderTokenUpdates: 503
        default: 502
        }
    }

    @Test("maps every documented reason with its documented status", arguments: APNsReason.documented)
    func everyReason(_ reason: APNsReason) throws {
        let status = try #require(reason.documentedStatus)
        let response = relayResponse(for: .apns(status: status, reason: reason, apnsID: nil), notification: "ID", ttl: 1)
        #expect(response.status == Self.expectedStatus(for: reason))
        #expect(response.credentialsRejected == (status == 403))
        #expect(response.body.contains(reason.rawValue))
        // The only 4xx is 410, for a token APNs said is dead: every sender
        // deletes on some 4xx, Pleroma and Akkoma on any.
        if (400...499).contains(response.status) {
            #expect(response.status == 410)
            #expect([.badDeviceToken, .deviceTokenNotForTopic, .expiredToken, .unregistered].contains(reason))
        }
    }

    @Test("round-trips every reason name and keeps unknown ones", arguments: APNsReason.documented)
    func rawValues(_ reason: APNsReason) {
        #expect(APNsReason(rawValue: reason.rawValue) == reason)
        #expect(reason.rawValue.first?.isUppercase == true)
    }

    @Test("has Apple's 32 documented reasons and the one APNs sends under another name; unknown names are kept verbatim")
    func documentedList() {
        #expect(APNsReason.documented.count == 33)
        #expect(Set(APNsReason.documented.map(\.rawValue)).count == 33)
        #expect(APNsReason(rawValue: "BadEnvironmentKeyInToken") == .badEnvironmentKeyInToken)
        #expect(APNsReason(rawValue: "BadEnvironmentKeyIdInToken") == .badEnvironmentKeyIdInToken)
        #expect(APNsReason(rawValue: "BrandNew") == .unknown("BrandNew"))
        #expect(APNsReason(rawValue: "BrandNew").rawValue == "BrandNew")
        #expect(APNsReason(rawValue: "unregistered") == .unknown("unregistered"))
        #expect(APNsReason.unknown("X").documentedStatus == nil)
    }

    @Test("keeps failure bodies on one line whatever the detail")
    func oneLine() {
        let response = relayResponse(for: .connectFailed("line one\r\nline two"), notification: "ID", ttl: 1)
        #expect(response.body == "cannot connect to APNs: line one  line two\n")
    }

    @Test("converts to an HTTP/1 response")
    func http1() {
        let response = relayResponse(for: .overloaded, notification: "ID", ttl: 1).http1Response
        #expect(response.status == 503)
        #expect(response.headers.contains(HTTPField(name: "Retry-After", value: "1")))
        #expect(response.body == Array("relay overloaded, retry\n".utf8))
    }

    @Test("only APNs' 200 and 403 are verdicts on the relay's credentials", arguments: [
        (DeliveryOutcome.apns(status: 200, reason: nil, apnsID: nil), CredentialVerdict?.some(.accepted)),
        (.apns(status: 403, reason: .badCertificate, apnsID: nil), .rejected),
        (.apns(status: 403, reason: nil, apnsID: nil), .rejected),
        (.apns(status: 410, reason: .unregistered, apnsID: nil), nil),
        (.apns(status: 400, reason: .badDeviceToken, apnsID: nil), nil),
        (.apns(status: 429, reason: .tooManyProviderTokenUpdates, apnsID: nil), nil),
        (.answerTimedOut, nil),
        (.tlsFailed("certificate expired"), nil),
    ])
    func credentialVerdicts(outcome: DeliveryOutcome, verdict: CredentialVerdict?) {
        #expect(outcome.credentialVerdict == verdict)
        let response = relayResponse(for: outcome, notification: "ID", ttl: 1)
        #expect(response.credentialsRejected == (verdict == .rejected))
    }
}
