/// A startup problem: one line, exit status 1.
public struct StartupFailure: Error {
    public var message: String
    public init(_ message: String) { self.message = message }
}
