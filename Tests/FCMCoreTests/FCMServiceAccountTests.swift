// A service account's file: what is read from a console-made one, and a
// one-line reason naming the field for every broken one, never showing the
// private key.

import FCMCore
import JSON
import Testing

@Suite("A service account's file")
struct FCMServiceAccountTests {
    @Test("a file as the console writes it is read")
    func consoleFile() throws {
        let account = try consoleAccount()
        #expect(account.projectID == "toot-relay-test")
        #expect(account.privateKeyID == "0123456789abcdef0123456789abcdef01234567")
        #expect(account.clientEmail == "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com")
        #expect(account.privateKey.pem == Array(fakeKeyPEM.utf8))
        #expect(account.tokenEndpoint == .google)
        #expect(account.tokenEndpoint.uri == "https://oauth2.googleapis.com/token")
        #expect(account.sendPath == "/v1/projects/toot-relay-test/messages:send")
        #expect(account.description
            == "firebase-adminsdk-abc12@toot-relay-test.iam.gserviceaccount.com (key 0123456789abcdef0123456789abcdef01234567, project toot-relay-test)")
    }

    @Test("variants a real file may have are read", arguments: [
        (["token_uri": nil], "https://oauth2.googleapis.com/token"),
        (["token_uri": #""https://accounts.google.com/o/oauth2/token""#], "https://accounts.google.com/o/oauth2/token"),
        (["token_uri": #""https://127.0.0.1:8443/token""#], "https://127.0.0.1:8443/token"),
        (["private_key": jsonString(fakeKeyPEM.replacingOccurrences("PRIVATE KEY", "RSA PRIVATE KEY"))],
         "https://oauth2.googleapis.com/token"),
        (["private_key": jsonString("\n  " + fakeKeyPEM.replacingOccurrences("\n", "\r\n") + "\n\n")],
         "https://oauth2.googleapis.com/token"),
        (["project_id": #""example.com:legacy-project""#, "universe_domain": nil, "client_id": "12345"],
         "https://oauth2.googleapis.com/token"),
    ] as [([String: String?], String)])
    func variants(changes: [String: String?], tokenURI: String) throws {
        let account = try readServiceAccount(serviceAccountJSON(replacing: changes))
        #expect(account.tokenEndpoint.uri == tokenURI)
    }

    /// Broken files and the one line each is refused with.
    static let refusals: [(String, String)] = [
        (serviceAccountJSON(replacing: ["type": nil]), "type is missing"),
        (serviceAccountJSON(replacing: ["type": #""authorized_user""#]),
         #"type is "authorized_user", a service account's file says "service_account""#),
        (serviceAccountJSON(replacing: ["project_id": nil]), "project_id is missing"),
        (serviceAccountJSON(replacing: ["project_id": "42"]), "project_id is a number, not a string"),
        (serviceAccountJSON(replacing: ["project_id": #""""#]), "project_id is empty"),
        (serviceAccountJSON(replacing: ["project_id": #""../admin""#]),
         #"project_id "../admin" does not start with a lowercase letter or digit"#),
        (serviceAccountJSON(replacing: ["project_id": #""proj/messages""#]),
         #"project_id "proj/messages" holds more than lowercase letters, digits, '-', '.' and ':'"#),
        (serviceAccountJSON(replacing: ["project_id": jsonString(String(repeating: "a", count: 257))]),
         "project_id is 257 bytes long (at most 256)"),
        (serviceAccountJSON(replacing: ["private_key_id": "null"]), "private_key_id is null, not a string"),
        (serviceAccountJSON(replacing: ["private_key_id": #""key id""#]),
         #"private_key_id "key id" holds more than letters, digits, '-', '_' and '.'"#),
        (serviceAccountJSON(replacing: ["client_email": #"["a@b"]"#]), "client_email is an array, not a string"),
        (serviceAccountJSON(replacing: ["client_email": #""no-at-sign""#]),
         #"client_email "no-at-sign" is not an address (name@domain)"#),
        (serviceAccountJSON(replacing: ["client_email": #""a@b@c""#]), #"client_email "a@b@c" is not an address (name@domain)"#),
        (serviceAccountJSON(replacing: ["client_email": #""a\"b@c""#]),
         #"client_email "a"b@c" holds more than letters, digits, '@', '.', '-', '_' and '+'"#),
        (serviceAccountJSON(replacing: ["token_uri": #""http://oauth2.googleapis.com/token""#]),
         #"token_uri "http://oauth2.googleapis.com/token" is not an https:// URI"#),
        (serviceAccountJSON(replacing: ["token_uri": #"{"uri":"x"}"#]), "token_uri is an object, not a string"),
        (serviceAccountJSON(replacing: ["private_key": nil]), "private_key is missing"),
        (serviceAccountJSON(replacing: ["private_key": "true"]), "private_key is a boolean, not a string"),
        (serviceAccountJSON(replacing: ["private_key": #""""#]), "private_key is empty"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyBody.joined())]),
         "private_key has no PEM block (-----BEGIN PRIVATE KEY-----)"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM.replacingOccurrences("\n", #"\n"#))]),
         #"private_key has its line breaks as the two characters \n (escaped twice?)"#),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM.replacingOccurrences("PRIVATE KEY", "ENCRYPTED PRIVATE KEY"))]),
         "private_key is an encrypted key; the relay needs it unencrypted, as the console writes it"),
        (serviceAccountJSON(replacing: ["private_key": jsonString("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
            + "DEK-Info: AES-128-CBC,00\n\n" + fakeKeyBody.joined(separator: "\n") + "\n-----END RSA PRIVATE KEY-----\n")]),
         "private_key is an encrypted key; the relay needs it unencrypted, as the console writes it"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM.replacingOccurrences("PRIVATE KEY", "EC PRIVATE KEY"))]),
         "private_key is an EC key; RS256 needs an RSA key"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM.replacingOccurrences("PRIVATE KEY", "CERTIFICATE"))]),
         "private_key holds a CERTIFICATE block, not a private key"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM.replacingOccurrences("PRIVATE KEY", "SECRET \(fakeKeyBody[0])"))]),
         "private_key holds a PEM block of another kind than a private key"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM.replacingOccurrences("-----END PRIVATE KEY-----", ""))]),
         "private_key has no -----END PRIVATE KEY----- line after its BEGIN line"),
        (serviceAccountJSON(replacing: ["private_key": jsonString("-----BEGIN PRIVATE KEY-----\n" + fakeKeyBody[0])]),
         "private_key has no -----END PRIVATE KEY----- line after its BEGIN line"),
        (serviceAccountJSON(replacing: ["private_key": jsonString("-----BEGIN PRIVATE KEY" + fakeKeyBody[0])]),
         "private_key has a PEM block whose BEGIN line does not end"),
        (serviceAccountJSON(replacing: ["private_key": jsonString("-----BEGIN PRIVATE KEY-----END PRIVATE KEY-----")]),
         "private_key has no -----END PRIVATE KEY----- line after its BEGIN line"),
        (serviceAccountJSON(replacing: ["private_key": jsonString("-----BEGIN PRIVATE KEY-----\n \n-----END PRIVATE KEY-----")]),
         "private_key has an empty PEM block"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM.replacingOccurrences("Secret", "Se cr*t!"))]),
         "private_key has a PEM block whose body is not base64"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(fakeKeyPEM + fakeKeyPEM)]),
         "private_key has a PEM block whose body is not base64"),
        (serviceAccountJSON(replacing: ["private_key": jsonString(
            "-----BEGIN PRIVATE KEY-----\n" + String(repeating: "QUJD\n", count: 3300) + "-----END PRIVATE KEY-----\n")]),
         "private_key is 16554 bytes long (at most 16384)"),
        // Hostile and broken texts.
        ("", "is not JSON (RFC 8259): at line 1, column 1, the text ends early"),
        ("[]", "is an array, not a JSON object"),
        (#""service_account""#, "is a string, not a JSON object"),
        ("{\"type\": \"service_account\",\n\"private_key\": \"-----BEGIN PRIVATE KEY-----\nMIIE\"}",
         #"is not JSON (RFC 8259): at line 2, column 44, a control character (byte 0xA) where JSON needs it escaped (a line break in a string is written \n)"#),
        (serviceAccountJSON() + "}", "is not JSON (RFC 8259): at line 14, column 1"),
        (serviceAccountJSON(replacing: ["client_id": "12,\n  \"type\": \"service_account\""]),
         "is not JSON (RFC 8259): at line 8, column 3"),
        ("\u{FEFF}" + serviceAccountJSON(), "is not JSON (RFC 8259): at line 1, column 1"),
        (String(repeating: "[", count: 100), "is not JSON (RFC 8259): at line 1, column 65"),
        (String(repeating: " ", count: 65_537), "is 65537 bytes, more than a service account's file (at most 65536)"),
    ]

    @Test("a broken file is refused with one line naming the field", arguments: refusals)
    func refused(text: String, expected: String) {
        #expect(throws: FCMServiceAccountError.self) { try readServiceAccount(text) }
        do {
            _ = try readServiceAccount(text)
        } catch {
            #expect(error.description == expected)
            #expect(!error.description.contains("\n"))
        }
    }

    @Test("no description shows the private key's text", arguments: refusals.map(\.0) + [serviceAccountJSON()])
    func neverShowsTheKey(text: String) throws {
        var shown: [String] = []
        do {
            let account = try readServiceAccount(text)
            shown = [account.description, String(describing: account), String(reflecting: account),
                     "\(account.privateKey)", String(reflecting: account.privateKey)]
            var dumped = ""
            dump(account, to: &dumped)
            shown.append(dumped)
        } catch {
            shown = [error.description, String(reflecting: error)]
        }
        for text in shown {
            for line in fakeKeyBody {
                // Any run of eight of the key's characters.
                let characters = Array(line)
                for start in 0...(characters.count - 8) {
                    #expect(!text.contains(String(characters[start..<(start + 8)])), "\(text)")
                }
            }
        }
    }

    @Test("a key that breaks the JSON around it is not quoted in the syntax error")
    func syntaxErrorInsideTheKey() {
        // The key's own text where JSON ends: the parser's message would quote it.
        let text = #"{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----"# + fakeKeyBody[0] + #"""#
            + fakeKeyBody[1] + #""}"#
        #expect(throws: FCMServiceAccountError.notJSON(JSONErrorPlace(line: 1, column: 139))) {
            try readServiceAccount(text)
        }
    }
}

extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
