/// Hands a value that is not `Sendable` (a loop-confined object, a batch for
/// one loop) to another loop through `EventLoop.execute`, whose closure must
/// be `Sendable`. Unchecked: the sender gives the value up, and only the
/// receiving loop uses it from then on.
public struct UnsafeTransfer<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
