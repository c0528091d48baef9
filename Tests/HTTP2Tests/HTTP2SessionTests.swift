import Testing
@testable import HTTP2

/// What both roles share, checked on each: the byte pump and the session's
/// liveness as seen by the connection that owns it.
@Suite("HTTP2Session")
struct HTTP2SessionTests {
    enum Role: String, CaseIterable { case client, server }

    func makeSession(_ role: Role) throws -> (HTTP2Session, AnyObject) {
        switch role {
        case .client:
            let delegate = ClientRecorder()
            return (try HTTP2ClientSession(delegate: delegate), delegate)
        case .server:
            let delegate = ServerRecorder()
            return (try HTTP2ServerSession(delegate: delegate), delegate)
        }
    }

    @Test("a new session has its SETTINGS to send and wants to read", arguments: Role.allCases)
    func freshSession(role: Role) throws {
        let (session, delegate) = try makeSession(role)
        #expect(session.wantsWrite)
        #expect(session.wantsRead)
        #expect(session.failure == nil)
        let output = session.takeOutput()
        #expect(!output.isEmpty)
        #expect(!session.wantsWrite, "everything pending was handed out")
        #expect(session.takeOutput().isEmpty)
        if role == .client {
            // RFC 9113 §3.4: the client connection preface comes first.
            #expect(output.starts(with: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)))
        }
        _ = delegate
    }

    @Test("garbage from the peer kills the session and says why", arguments: Role.allCases)
    func garbage(role: Role) throws {
        let (session, delegate) = try makeSession(role)
        _ = session.takeOutput()
        let garbage = Array(repeating: UInt8(0xFF), count: 64)
        #expect(throws: HTTP2Error.self) { try session.receive(garbage) }
        #expect(session.failure != nil)
        // Whatever GOAWAY the session queued still goes out, then it is done.
        _ = session.takeOutput()
        #expect(!session.wantsRead)
        _ = delegate
    }
}
