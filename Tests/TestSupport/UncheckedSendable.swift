/// A value handed to a `@Sendable` closure that runs on the one loop that
/// owns it; the test, not the compiler, vouches that only that loop uses it.
public struct UncheckedSendable<Value>: @unchecked Sendable {
    public let value: Value

    public init(value: Value) {
        self.value = value
    }
}
