import Glibc

/// This process's name in the fleet: its consumer name in the streams'
/// group, so what it holds can be told from what others hold. Host name,
/// process id and a random part: a restarted instance with the same pid
/// (a container's 1) is another consumer, and the pending entries of the
/// one before it are claimed like any dead instance's.
public enum InstanceName {
    public static func make<Random: RandomNumberGenerator>(using random: inout Random) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        let safeHost = String(host.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".") }.prefix(64))
        let suffix = String(random.next() & 0xFFFF_FFFF, radix: 16)
        return (safeHost.isEmpty ? "host" : safeHost) + "-" + String(getpid()) + "-" + suffix
    }

    public static func make() -> String {
        var random = SystemRandomNumberGenerator()
        return make(using: &random)
    }
}
