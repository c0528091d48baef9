import APNsCore
import TLS

/// A provider key as the emulator checks tokens against it (APNsCore's
/// `ProviderTokenVerifier` does the checking): what a verified token says
/// about its key, for the per-request checks (the topic), the connection's
/// binding to its first key and the record.
final class EmulatorTokenKey: ProviderTokenKey {
    let keyID: String
    let teamID: String
    /// nil: a team key (any topic).
    let topics: Set<String>?
    private let verifier: ES256Verifier
    /// Whether the key is valid in the emulator's environment.
    fileprivate let validHere: Bool

    fileprivate init(_ loaded: LoadedProviderKey, environment: APNsEnvironment) {
        keyID = loaded.key.keyID
        teamID = loaded.key.teamID
        topics = loaded.key.topics
        verifier = loaded.verifier
        validHere = loaded.key.environments.contains(environment)
    }

    func verifies(_ signingInput: [UInt8], signature: [UInt8]) -> Bool {
        verifier.verify(signingInput, signature: signature)
    }

    /// Whether the key may sign notifications for `topic`.
    func covers(topic: String) -> Bool {
        topics?.contains(topic) ?? true
    }
}

extension ProviderTokenVerifier where Key == EmulatorTokenKey {
    /// The verifier of `keys` for an emulator playing `environment`: a
    /// token of a key scoped to the other one is 403 BadEnvironmentKeyInToken
    /// (`APNsRejection.keyForOtherEnvironment`).
    convenience init(keys: [LoadedProviderKey], environment: APNsEnvironment) {
        self.init(keys: keys.map { EmulatorTokenKey($0, environment: environment) }) { key in
            key.validHere ? nil : APNsRejection.keyForOtherEnvironment.reason
        }
    }
}

/// The emulator's provider token verifier.
typealias EmulatorTokenVerifier = ProviderTokenVerifier<EmulatorTokenKey>
