// Caps on a methodCall's depth and size, checked before
// and while the document is read, so a hostile body costs bounded memory
// and time. The caller states every value: the right sizes depend on the
// listener's body limit and the number of tokens a call may carry.

/// What one XML-RPC document may hold.
public struct XMLRPCLimits: Sendable, Equatable {
    public init(maxBodyBytes: Int, maxDepth: Int, maxElements: Int, maxStringBytes: Int) {
        (self.maxBodyBytes, self.maxDepth) = (maxBodyBytes, maxDepth)
        (self.maxElements, self.maxStringBytes) = (maxElements, maxStringBytes)
    }

    /// The body's size in bytes, refused before libxml2 sees it.
    public let maxBodyBytes: Int
    /// How deeply elements may nest (`<methodCall>` is depth 1; each array
    /// or struct level adds three: value, array/struct, data/member).
    public let maxDepth: Int
    /// How many elements the document may have in all.
    public let maxElements: Int
    /// The longest text in bytes (UTF-8) of one string, name or number.
    public let maxStringBytes: Int
}
