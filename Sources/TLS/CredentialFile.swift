import Glibc

/// Reading credential files with an errno-precise error.
public enum CredentialFile {
    /// Credential files are a few KiB; anything this large is not one.
    public static let maximumSize = 1 << 20

    public static func read(_ path: String) throws(CredentialError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
            }
            bytes.append(contentsOf: chunk[0..<count])
            guard bytes.count <= maximumSize else {
                throw .unreadableFile(path: path, reason: "larger than \(maximumSize) bytes, not a credential file")
            }
        }
    }
}
