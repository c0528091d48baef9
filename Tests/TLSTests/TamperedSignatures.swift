import Testing

/// Expects `verify` to refuse a signature of `message` once either is
/// tampered with: the message with a bit flipped, the signature with a bit
/// flipped at each of `indexes` (`bit`), and signatures of its length all
/// zeros or all ones. What ES256 and RS256 verifiers have in common.
func expectTamperingRefused(message: [UInt8], signature: [UInt8], flipping indexes: [Int], bit: UInt8,
                            verify: ([UInt8], [UInt8]) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) {
    var changed = message
    changed[0] ^= 1
    #expect(!verify(changed, signature), sourceLocation: sourceLocation)
    for index in indexes {
        var bad = signature
        bad[index] ^= bit
        #expect(!verify(message, bad), "bit flipped at \(index)", sourceLocation: sourceLocation)
    }
    #expect(!verify(message, [UInt8](repeating: 0, count: signature.count)), sourceLocation: sourceLocation)
    #expect(!verify(message, [UInt8](repeating: 0xFF, count: signature.count)), sourceLocation: sourceLocation)
}
