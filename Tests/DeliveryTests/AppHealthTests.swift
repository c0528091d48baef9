import APNsCore
import Delivery
import RelayCore
import Testing

@Suite("AppHealth")
struct AppHealthTests {
    static let verdicts: [(before: Bool, verdict: CredentialVerdict?, after: Bool)] = [
        (false, .rejected, true), (true, .rejected, true),
        (true, .accepted, false), (false, .accepted, false),
        (true, nil, true), (false, nil, false),
    ]

    @Test("a rejection marks the credentials, an acceptance clears them, nil changes nothing", arguments: verdicts)
    func records(_ example: (before: Bool, verdict: CredentialVerdict?, after: Bool)) {
        let health = AppHealth()
        #expect(!health.credentialsRejected)
        if example.before { health.record(.rejected) }
        health.record(example.verdict)
        #expect(health.credentialsRejected == example.after)
    }

    @Test("an app made without a health gets one of its own")
    func ownHealth() {
        let first = RelayApp(id: "a", topic: "com.example.a")
        let second = RelayApp(id: "b", topic: "com.example.b")
        first.health.record(.rejected)
        #expect(first.health.credentialsRejected && !second.health.credentialsRejected)
        #expect(first.health is AppHealth)
    }
}
