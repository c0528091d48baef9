// Caps on a methodCall (issue #13: "depth and size caps"), checked before
// and while the document is read, so a hostile body costs bounded memory
// and time. The caller states every value: the right sizes depend on the
// listener's body limit and the number of tokens a call may carry.

/// What one XML-RPC document may hold.
public struct XMLRPCLimits: Sendable, Equatable {
    /// The body's size in bytes, refused before libxml2 sees it.
    public var maxBodyBytes: Int
    /// How deeply elements may nest (`<methodCall>` is depth 1; each array
    /// or struct level adds three: value, array/struct, data/member).
    public var maxDepth: Int
    /// How many elements the document may have in all.
    public var maxElements: Int
    /// The longest text in bytes (UTF-8) of one string, name or number.
    public var maxStringBytes: Int

    public init(maxBodyBytes: Int, maxDepth: Int, maxElements: Int, maxStringBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
        self.maxDepth = maxDepth
        self.maxElements = maxElements
        self.maxStringBytes = maxStringBytes
    }
}
