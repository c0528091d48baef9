import EventLoop
import HTTPCore
import RelayCore

// Keys are optional only when API_BIND is a loopback address
// (Status-style deployments run the gateway beside the server); the relay
// refuses to start with a non-loopback API_BIND and no key. Here rather
// than beside `APIKeyring` in RelayCore, which imports no C: whether an
// address is loopback is read with inet_pton (`SocketAddress(ip:port:)`),
// not with a second, hand-written IPv6 parser.

/// Why the provider API must not start as configured, nil when it may:
/// an API listener (`API_PORT` set) on an address that is not loopback
/// with no API key at all would let anyone who reaches it send
/// notifications for every app. The text names `API_BIND` and the fixes.
/// Called by `AppsLoader.load`, so start-up and every reload apply it (a
/// reload that removes the last key is refused).
func apiExposureProblem(configuration: Configuration, keyring: APIKeyring) -> String? {
    guard configuration.apiPort != nil, keyring.isEmpty, !isLoopbackAddress(configuration.apiBindAddress) else {
        return nil
    }
    return "API_BIND: \(configuration.apiBindAddress) is not a loopback address and there is no API key: anyone "
        + "who reaches API_PORT could send notifications for every app. Set API_KEYS, or add [[api-key]] entries "
        + "to APPS_FILE, or set API_BIND to 127.0.0.1 or ::1"
}

/// Whether `address` (as `API_BIND` gives it) can only be reached from
/// this host: `localhost` (RFC 6761 §6.3: it names loopback), an IPv4
/// address in 127.0.0.0/8 (RFC 1122 §3.2.1.3), `::1` (RFC 4291 §2.5.3),
/// or 127.0.0.0/8 mapped into IPv6 (`::ffff:127.0.0.1`). Any other name,
/// and the wildcards `0.0.0.0` and `::`, are not.
func isLoopbackAddress(_ address: String) -> Bool {
    let lowered = asciiLowercased(address)
    if lowered == "localhost" || lowered == "localhost." { return true }
    guard let parsed = SocketAddress(ip: address, port: 0) else { return false }
    let bytes = parsed.addressBytes
    switch parsed.family {
    case .ipv4:
        return bytes[0] == 127
    case .ipv6:
        let ipv6Loopback = bytes[..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
        let mappedIPv4 = bytes[..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        return ipv6Loopback || (mappedIPv4 && bytes[12] == 127)
    }
}
