import Testing
@testable import AppsFile

struct VariableExpansionTests {
    static let environment = ["A": "alpha", "B_2": "beta", "_x": "under", "EMPTY": "", "DOLLAR": "${A}"]

    @Test("${NAME} reads the environment, $${ writes ${, any other $ is itself", arguments: [
        ("plain", "plain"),
        ("", ""),
        ("${A}", "alpha"),
        ("x${A}y${B_2}z", "xalphaybetaz"),
        ("${_x}", "under"),
        ("${EMPTY}", ""),
        ("pre${EMPTY}post", "prepost"),
        ("$${A}", "${A}"),
        ("$$${A}", "$${A}"),  // read left to right: "$", then "$${"
        ("$$", "$$"),
        ("$", "$"),
        ("cost: 5$", "cost: 5$"),
        ("$A", "$A"),
        ("a$b", "a$b"),
        ("${A}${A}", "alphaalpha"),
        ("${DOLLAR}", "${A}"),  // a value is not expanded again
        ("é${A}ü", "éalphaü"),
        ("$${", "${"),
    ])
    func expands(text: String, expected: String) throws {
        #expect(try expandVariables(in: text, environment: Self.environment) == expected)
    }

    @Test("an unset variable is an error naming it", arguments: [
        ("${NOPE}", "NOPE"),
        ("x${A}${NOPE_2}", "NOPE_2"),
        ("${a}", "a"),  // names are case-sensitive
    ])
    func unset(text: String, name: String) {
        #expect(throws: VariableExpansionError.unset(name: name)) {
            try expandVariables(in: text, environment: Self.environment)
        }
    }

    @Test("a ${ that is not ${NAME} is an error", arguments: [
        "${", "${}", "${A", "${A B}", "${9A}", "${A-B}", "${é}", "x${ A}", "${A}${",
    ])
    func malformed(text: String) {
        #expect(throws: VariableExpansionError.malformed) {
            try expandVariables(in: text, environment: Self.environment)
        }
    }

    @Test("expansion happens in every string value, before validation")
    func everyString() throws {
        let text = """
            [[app]]
            id = "${APP}"
            topic = "${TOPIC}"
            environments = ["${ENV}"]
            alert = "${ALERT}"
            p8 = "${PEM}"
            key-id = "${KEY}"
            team-id = "${TEAM}"
            """
        let environment = ["APP": "toot", "TOPIC": "cx.c3.toot", "ENV": "development", "ALERT": "New",
                           "PEM": "-----BEGIN PRIVATE KEY-----", "KEY": "ABC123DEFG", "TEAM": "TEAM123456"]
        let apps = try AppsFile.parse(text, file: "apps.toml", environment: environment).apps
        #expect(apps == [AppDefinition(id: "toot", topic: "cx.c3.toot", alert: .text("New"), credentials: [
            .development: .p8(pem: "-----BEGIN PRIVATE KEY-----", keyID: "ABC123DEFG", teamID: "TEAM123456"),
        ])])
    }
}
