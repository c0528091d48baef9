import Dispatch
import Glibc

/// Host name resolution off the loop thread.
public enum Resolver {
    /// Resolves `host` to TCP addresses for `port`, calling `completion` on
    /// `loop`'s thread (always asynchronously, never inside this call).
    ///
    /// Numeric literals (`127.0.0.1`, `::1`, `[::1]`) are parsed on the spot
    /// with no thread; names go through getaddrinfo on a background thread,
    /// because it blocks (files, DNS). A name that is not a valid host name
    /// (RFC 1123: letters, digits, `-`, dot-separated labels of 1–63 bytes,
    /// 253 bytes in all) fails with EINVAL without any lookup.
    /// Call from the loop thread (the completion is confined to it).
    public static func resolve(host: String, port: UInt16, on loop: EventLoop,
                               _ completion: @escaping (Result<[SocketAddress], SocketError>) -> Void) {
        // Created and consumed on the loop thread only; the box just rides
        // through the background thread untouched.
        let box = CompletionBox(completion)
        if let literal = SocketAddress(ip: host, port: port) {
            loop.execute { box.completion(.success([literal])) }
            return
        }
        guard isValidHostName(host) else {
            loop.execute { box.completion(.failure(SocketError(.resolve, errno: EINVAL))) }
            return
        }
        DispatchQueue.global().async {
            let result = lookUp(host: host, port: port)
            loop.execute { box.completion(result) }
        }
    }

    private final class CompletionBox: @unchecked Sendable {
        let completion: (Result<[SocketAddress], SocketError>) -> Void
        init(_ completion: @escaping (Result<[SocketAddress], SocketError>) -> Void) { self.completion = completion }
    }

    /// RFC 1123 §2.1 host name syntax (one trailing dot allowed).
    public static func isValidHostName(_ host: String) -> Bool {
        var bytes = Array(host.utf8)
        if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        for label in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard (1...63).contains(label.count),
                  label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else { return false }
            for byte in label {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                    continue
                default:
                    return false
                }
            }
        }
        return true
    }

    /// Blocking getaddrinfo; TCP addresses in the resolver's order, duplicates removed.
    static func lookUp(host: String, port: UInt16) -> Result<[SocketAddress], SocketError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        // Only families this host can reach (no AAAA when there is no IPv6).
        hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            return .failure(SocketError(.resolve, errno: status == EAI_SYSTEM ? errno : status))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let raw = current.pointee.ai_addr,
               let address = SocketAddress(UnsafeRawPointer(raw), length: current.pointee.ai_addrlen),
               !addresses.contains(address) {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        // EAI_NONAME: the name resolved, but to nothing usable over TCP.
        return addresses.isEmpty ? .failure(SocketError(.resolve, errno: EAI_NONAME)) : .success(addresses)
    }
}
