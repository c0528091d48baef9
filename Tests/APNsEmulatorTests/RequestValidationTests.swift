import Testing
import APNsCore
@testable import APNsEmulator

@Suite("APNs request rules (pure)")
struct RequestValidationTests {
    static let token = String(repeating: "0f", count: 32)

    static func validate(method: String = "POST", path: String = "/3/device/" + token,
                         headers: [(name: String, value: String)] = [], body: [UInt8] = Fixture.payload,
                         credential: ClientCredential = .none, expectedTopic: String? = nil)
        -> Result<ValidatedNotification, APNsRejection> {
        APNsRequestValidator.validate(method: method, path: path, headers: headers, body: body,
                                      credential: credential, expectedTopic: expectedTopic, now: 1_800_000_000)
    }

    @Test("a complete request yields every field")
    func fields() throws {
        let result = Self.validate(headers: [
            ("apns-id", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"), ("apns-topic", "com.example.app"),
            ("apns-push-type", "alert"), ("apns-priority", "5"), ("apns-expiration", "0"),
            ("apns-collapse-id", String(repeating: "c", count: 64)), ("user-agent", "x"),
        ])
        let notification = try result.get()
        #expect(notification.token == Self.token[...])
        #expect(notification.apnsIDKey == UUIDKey(high: 0xaaaa_aaaa_bbbb_4ccc, low: 0x8ddd_eeee_eeee_eeee))
        #expect(notification.topic == "com.example.app")
        #expect(notification.pushType == "alert")
        #expect(notification.priority == 5)
        #expect(notification.expiration == 0)
        #expect(notification.collapseID?.count == 64)
    }

    @Test("token lengths: 64 to 200 even hex digits", arguments: [(62, false), (63, false), (64, true), (65, false),
                                                                   (128, true), (200, true), (202, false)])
    func tokenLengths(length: Int, valid: Bool) {
        let result = Self.validate(path: "/3/device/" + String(repeating: "a", count: length))
        if valid {
            #expect((try? result.get()) != nil)
        } else {
            #expect(result.failureValue == APNsRejection(.badDeviceToken))
        }
    }

    @Test("priorities 10, 5 and 1 are Apple's; expiration is digits", arguments: [
        ("apns-priority", "10", true), ("apns-priority", "5", true), ("apns-priority", "1", true),
        ("apns-priority", "0", false), ("apns-priority", "high", false), ("apns-priority", "", false),
        ("apns-expiration", "1700000000", true), ("apns-expiration", "-1", false), ("apns-expiration", "", false),
        ("apns-expiration", "1e9", false), ("apns-expiration", String(repeating: "9", count: 19), false),
    ])
    func numericHeaders(name: String, value: String, valid: Bool) {
        let result = Self.validate(headers: [(name, value)])
        #expect((try? result.get()) != nil || !valid)
        if !valid {
            #expect(result.failureValue == APNsRejection(name == "apns-priority" ? .badPriority : .badExpirationDate))
        }
    }

    @Test("every Apple push type is accepted", arguments: apnsPushTypes.sorted())
    func pushTypes(type: String) {
        #expect((try? Self.validate(headers: [("apns-push-type", type)]).get()) != nil)
    }

    @Test("apns-id must be a canonical UUID", arguments: [
        "123e4567-e89b-12d3-a456-42661417400", "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g",
        "{123e4567-e89b-12d3-a456-426614174000}", "",
    ])
    func badMessageIDs(id: String) {
        #expect(Self.validate(headers: [("apns-id", id)]).failureValue == APNsRejection(.badMessageId))
    }

    @Test("payload checks: empty, size limits (VoIP 5 KB), JSON object with aps")
    func payloads() {
        #expect(Self.validate(body: []).failureValue == APNsRejection(.payloadEmpty))
        let big = Array(("{\"aps\":{},\"p\":\"" + String(repeating: "x", count: 4096 - 17) + "\"}").utf8)
        #expect(big.count == 4096)
        #expect((try? Self.validate(body: big).get()) != nil)
        let bigger = Array(("{\"aps\":{},\"p\":\"" + String(repeating: "x", count: 4097 - 17) + "\"}").utf8)
        #expect(Self.validate(body: bigger).failureValue == APNsRejection(.payloadTooLarge))
        #expect((try? Self.validate(headers: [("apns-push-type", "voip")], body: bigger).get()) != nil)
        #expect(Self.validate(body: Array(" {\"aps\":1} ".utf8)).failureValue == nil)
        for text in ["[\"aps\"]", "{\"ap\":1}", "{\"aps\"", "\"aps\"}", "null", "{\"APS\":{}}"] {
            #expect(Self.validate(body: Array(text.utf8)).failureValue == .badPayload, "\(text)")
        }
    }

    @Test("certificate topics: the UID and its derived topics; default to the UID")
    func certificateTopics() throws {
        let credential = ClientCredential.certificate(uid: "com.example.app")
        #expect(try Self.validate(credential: credential).get().topic == "com.example.app")
        #expect(try Self.validate(credential: credential).get().authenticatedAs == "com.example.app")
        for topic in ["com.example.app", "com.example.app.voip", "com.example.app.complication"] {
            #expect((try? Self.validate(headers: [("apns-topic", topic)], credential: credential).get()) != nil)
        }
        #expect(Self.validate(headers: [("apns-topic", "com.example.other")], credential: credential).failureValue
            == APNsRejection(.topicDisallowed))
        #expect(Self.validate(headers: [("apns-topic", "")], credential: credential).failureValue == APNsRejection(.badTopic))
        #expect(Self.validate(credential: .certificate(uid: nil)).failureValue == APNsRejection(.missingTopic))
        #expect(Self.validate(headers: [("apns-topic", "bad topic")]).failureValue == APNsRejection(.badTopic))
        #expect(Self.validate(headers: [("apns-topic", "com.a")], expectedTopic: "com.b").failureValue
            == APNsRejection(.deviceTokenNotForTopic))
    }

    @Test("duplicate APNs headers are 400 DuplicateHeaders; repeated other headers are fine")
    func duplicates() {
        for name in ["apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id",
                     "authorization"] {
            let value = name == "apns-id" ? "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee" : name == "apns-priority" ? "10"
                : name == "apns-expiration" ? "0" : name == "apns-push-type" ? "alert" : "x"
            #expect(Self.validate(headers: [(name, value), (name, value)]).failureValue == APNsRejection(.duplicateHeaders),
                    "\(name)")
        }
        #expect((try? Self.validate(headers: [("x-a", "1"), ("x-a", "2")]).get()) != nil)
    }

    @Test("method and path come first: 405 then 404, then the token")
    func order() {
        #expect(Self.validate(method: "PUT", path: "/nope").failureValue == APNsRejection(.methodNotAllowed))
        #expect(Self.validate(path: "/3/device").failureValue == APNsRejection(.badPath))
        #expect(Self.validate(path: "/3/device/").failureValue == APNsRejection(.missingDeviceToken))
        #expect(Self.validate(path: "/3/device/\(Self.token)?x=1").failureValue == APNsRejection(.badDeviceToken))
    }

    @Test("UUID keys print back in Apple's uppercase form; random ones are version 4")
    func uuidText() throws {
        let key = try #require(UUIDKey("123e4567-e89b-12d3-a456-426614174000"[...].utf8))
        #expect(key.text == "123E4567-E89B-12D3-A456-426614174000")
        var generator = SystemRandomNumberGenerator()
        let random = UUIDKey.random(using: &generator)
        #expect(UUIDKey(random.text[...].utf8) == random)
        #expect(Array(random.text)[14] == "4")
        #expect("89AB".contains(Array(random.text)[19]))
    }

    @Test("a certificate covers its bundle id and the topic each of Apple's push types derives from it, nothing else",
          arguments: [
              ("com.example.app", true), ("com.example.app.voip", true), ("com.example.app.complication", true),
              ("com.example.app.pushkit.fileprovider", true), ("com.example.app.push-type.liveactivity", true),
              ("com.example.app.voip-ptt", true), ("com.example.app.location-query", true),
              ("com.example.app.push-type.widgets", true), ("com.example.app.push-type.controls", true),
              ("com.example.other", false), ("com.example.other.voip", false), ("com.example.app.other", false),
              ("com.example.app.voip.voip", false), ("com.example", false), (".voip", false),
          ])
    func certificateTopics(topic: String, allowed: Bool) {
        #expect(APNsRequestValidator.certificateAllows(topic: topic, uid: "com.example.app") == allowed)
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
