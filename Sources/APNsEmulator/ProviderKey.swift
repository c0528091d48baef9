import APNsCore
import TLS

/// One provider token key the emulator accepts (Apple: "Establishing a
/// token-based connection to APNs"): the public half of an AuthKey_XXXX.p8,
/// its key id (the JWT `kid`) and its team (the JWT `iss`). Apple's 2025 key
/// options restrict a key to the sandbox or to production, and a
/// topic-specific key to the topics chosen for it; both are modelled here.
public struct APNsEmulatorProviderKey: Sendable, Hashable {
    public var keyID: String
    public var teamID: String
    /// `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo), EC P-256.
    public var publicKeyPEM: [UInt8]
    /// The APNs environments the key may be used in; a token of a key not
    /// valid in the emulator's environment is refused (`APNsRejection.keyForOtherEnvironment`).
    public var environments: Set<APNsEnvironment>
    /// A topic-specific key: exactly the topics it covers (another topic is
    /// 400 TopicDisallowed). nil: a team key, valid for any topic.
    public var topics: Set<String>?

    public init(keyID: String, teamID: String, publicKeyPEM: [UInt8],
                environments: Set<APNsEnvironment> = [.production, .development], topics: Set<String>? = nil) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKeyPEM = publicKeyPEM
        self.environments = environments
        self.topics = topics
    }

    /// The field names of the `--provider-key` form, in the order `--help` shows them.
    public static let specificationFields = ["key-id", "team-id", "public-key", "environment", "topic"]

    /// Reads the `--provider-key` form: comma-separated `name=value` fields,
    /// `key-id=…,team-id=…,public-key=FILE` required, `environment=production`
    /// or `environment=development` (repeatable; default both), `topic=…`
    /// (repeatable; absent: a team key). The file name cannot hold a comma.
    /// The file is read here; whether it holds a P-256 key is checked when
    /// the emulator loads it.
    public init(specification: String) throws(APNsEmulatorError) {
        func invalid(_ reason: String) -> APNsEmulatorError {
            .invalidConfiguration("provider key \"\(specification)\": \(reason)")
        }
        var single: [String: String] = [:]
        var environments: Set<APNsEnvironment> = []
        var topics: Set<String> = []
        for field in specification.split(separator: ",", omittingEmptySubsequences: false) {
            guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
                throw invalid("\"\(field)\" is not name=value")
            }
            let name = String(field[..<equals])
            let value = String(field[field.index(after: equals)...])
            guard !value.isEmpty else { throw invalid("\(name) is empty") }
            switch name {
            case "key-id", "team-id", "public-key":
                guard single.updateValue(value, forKey: name) == nil else { throw invalid("\(name) given twice") }
            case "environment":
                guard let environment = APNsEnvironment(rawValue: value) else {
                    throw invalid("environment must be production or development, not \"\(value)\"")
                }
                environments.insert(environment)
            case "topic":
                guard APNsRequestValidator.isTopic(value.utf8) else { throw invalid("\"\(value)\" is not a topic") }
                topics.insert(value)
            default:
                throw invalid("unknown field \"\(name)\" (known: \(Self.specificationFields.joined(separator: ", ")))")
            }
        }
        guard let keyID = single["key-id"], let teamID = single["team-id"], let file = single["public-key"] else {
            throw invalid("key-id, team-id and public-key are required")
        }
        let pem: [UInt8]
        do { pem = try CredentialFile.read(file) } catch { throw .providerKey(keyID: keyID, error) }
        self.init(keyID: keyID, teamID: teamID, publicKeyPEM: pem,
                  environments: environments.isEmpty ? [.production, .development] : environments,
                  topics: topics.isEmpty ? nil : topics)
    }
}

/// A provider key ready to check signatures: loaded once, shared by the loop
/// threads (ES256Verifier only reads its key).
struct LoadedProviderKey: Sendable {
    let key: APNsEmulatorProviderKey
    let verifier: ES256Verifier

    /// Checks what a configuration can get wrong, so a bad key is an error
    /// at start, never a refusal of every request.
    static func load(_ keys: [APNsEmulatorProviderKey]) throws(APNsEmulatorError) -> [LoadedProviderKey] {
        guard !keys.isEmpty else { throw .invalidConfiguration("token authentication needs at least one provider key") }
        var seen: Set<String> = []
        var loaded: [LoadedProviderKey] = []
        for key in keys {
            guard !key.keyID.isEmpty, !key.teamID.isEmpty else {
                throw .invalidConfiguration("a provider key needs a key id and a team id")
            }
            guard seen.insert(key.keyID).inserted else {
                throw .invalidConfiguration("provider key id \(key.keyID) is given twice")
            }
            guard !key.environments.isEmpty else {
                throw .invalidConfiguration("provider key \(key.keyID) is valid in no environment")
            }
            if let topics = key.topics {
                guard !topics.isEmpty else { throw .invalidConfiguration("provider key \(key.keyID) covers no topic") }
                for topic in topics where !APNsRequestValidator.isTopic(topic.utf8) {
                    throw .invalidConfiguration("provider key \(key.keyID): \"\(topic)\" is not a topic")
                }
            }
            do {
                loaded.append(LoadedProviderKey(key: key, verifier: try ES256Verifier(publicKeyPEM: key.publicKeyPEM)))
            } catch {
                throw .providerKey(keyID: key.keyID, error)
            }
        }
        return loaded
    }
}
