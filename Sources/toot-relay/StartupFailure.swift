/// A startup problem: one line, exit status 1.
struct StartupFailure: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
