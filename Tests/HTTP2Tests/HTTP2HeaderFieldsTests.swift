import Testing
@testable import HTTP2

/// Keeps what the in-place view answered during the callback.
private final class FieldsRecorder: HTTP2ClientSessionDelegate {
    var status: Int?
    var count = 0
    var all: [String] = []
    var apnsID: String?
    var apnsIDMatches = false
    var apnsIDMatchesOther = true
    var missing: String? = "not asked"

    func session(_ session: HTTP2ClientSession, didReceiveResponse status: Int, fields: HTTP2HeaderFields,
                 streamID: Int32) {
        self.status = status
        count = fields.count
        all = fields.map { "\($0.name)=\($0.value)" }
        apnsID = fields.value(for: "apns-id")
        apnsIDMatches = fields.value(for: "apns-id", equals: "second")
        apnsIDMatchesOther = fields.value(for: "apns-id", equals: "first")
        missing = fields.value(for: "x-missing")
    }

    func session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {}
    func session(_ session: HTTP2ClientSession, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {}
    func session(_ session: HTTP2ClientSession, didReceiveSettings maxConcurrentStreams: UInt32) {}
    func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode,
                 debugData: String) {}
    func session(_ session: HTTP2ClientSession, didReceivePingAck payload: UInt64) {}
}

@Suite("HTTP2HeaderFields")
struct HTTP2HeaderFieldsTests {
    @Test("the response fields are read in place: all in order, by name (the last one), compared without a copy")
    func readsInPlace() throws {
        let recorder = FieldsRecorder()
        let serverEvents = ServerRecorder()
        let client = try HTTP2ClientSession(delegate: recorder)
        let server = try HTTP2ServerSession(delegate: serverEvents)
        serverEvents.answer = { _ in
            .init(status: 410, headers: [("apns-id", "first"), ("content-type", "application/json"), ("apns-id", "second")])
        }
        _ = try client.submitRequest(path: "/", authority: "localhost", headers: [], body: [1])
        try pump(client, server)
        #expect(recorder.status == 410)
        #expect(recorder.count == 3)
        #expect(recorder.all == ["apns-id=first", "content-type=application/json", "apns-id=second"])
        #expect(recorder.apnsID == "second")
        #expect(recorder.apnsIDMatches)
        #expect(!recorder.apnsIDMatchesOther)
        #expect(recorder.missing == nil)
    }

    @Test("a block with no regular field is empty, and every lookup says so")
    func emptyBlock() {
        let fields = HTTP2HeaderFields(HeaderBlock())
        #expect(fields.isEmpty)
        #expect(fields.value(for: "apns-id") == nil)
        #expect(!fields.value(for: "apns-id", equals: ""))
    }
}
