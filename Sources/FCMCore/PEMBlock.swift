// The shape of a PEM block (RFC 7468 §3): what a service account's
// `private_key` must look like before OpenSSL reads it as a key. Checked
// here so that a broken file is refused with a reason when it is loaded,
// and with a reason that never quotes the key: only the label of a block
// the relay knows is ever named.

enum PEMBlock {
    /// Labels named in a reason when found instead of a key's.
    private static let knownLabels = [
        "CERTIFICATE", "PUBLIC KEY", "RSA PUBLIC KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
    ]

    /// Why `text` is not one PEM block with one of `labels` and a base64
    /// body; nil when it is. Blanks around the block are allowed.
    static func problem(in text: [UInt8], labels: [String]) -> String? {
        var start = 0, end = text.count
        while start < end && isBlank(text[start]) { start += 1 }
        while end > start && isBlank(text[end - 1]) { end -= 1 }
        let block = text[start..<end]
        // No PEM holds a backslash: `\n` as two characters is a file whose
        // key was JSON-escaped twice.
        if block.firstRange(of: Array(#"\n"#.utf8)) != nil {
            return #"has its line breaks as the two characters \n (escaped twice?)"#
        }
        let begin = Array("-----BEGIN ".utf8), dashes = Array("-----".utf8)
        guard block.starts(with: begin) else { return "has no PEM block (-----BEGIN PRIVATE KEY-----)" }
        let afterBegin = block.index(block.startIndex, offsetBy: begin.count)
        guard let labelEnd = block[afterBegin...].firstRange(of: dashes) else {
            return "has a PEM block whose BEGIN line does not end"
        }
        let label = String(decoding: block[afterBegin..<labelEnd.lowerBound], as: UTF8.self)
        guard labels.contains(label) else {
            if label == "ENCRYPTED PRIVATE KEY" {
                return "is an encrypted key; the relay needs it unencrypted, as the console writes it"
            }
            if label == "EC PRIVATE KEY" { return "is an EC key; RS256 needs an RSA key" }
            return knownLabels.contains(label) ? "holds a \(label) block, not a private key"
                : "holds a PEM block of another kind than a private key"
        }
        let endLine = Array("-----END \(label)-----".utf8)
        guard block.count >= endLine.count, block.suffix(endLine.count).elementsEqual(endLine) else {
            return "has no -----END \(label)----- line after its BEGIN line"
        }
        guard labelEnd.upperBound <= block.endIndex - endLine.count else {
            return "has no -----END \(label)----- line after its BEGIN line"
        }
        let body = block[labelEnd.upperBound..<(block.endIndex - endLine.count)]
        if body.firstRange(of: Array("Proc-Type:".utf8)) != nil {
            return "is an encrypted key; the relay needs it unencrypted, as the console writes it"
        }
        guard body.contains(where: { !isBlank($0) }) else { return "has an empty PEM block" }
        guard body.allSatisfy({ isBlank($0) || isBase64Digit($0) }) else {
            return "has a PEM block whose body is not base64"
        }
        return nil
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }

    /// A digit of base64's standard alphabet or its padding (RFC 4648 §4):
    /// the alphabet of a PEM body (RFC 7468 §3).
    private static func isBase64Digit(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
    }
}
