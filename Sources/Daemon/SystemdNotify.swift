import Glibc

/// sd_notify(3) without libsystemd: one datagram to the unix socket named by
/// `$NOTIFY_SOCKET` (a path, or an abstract name when it starts with `@`).
/// With `Type=notify`, systemd counts the service as started at `READY=1`
/// and as stopping at `STOPPING=1`. Without the variable (not under systemd)
/// nothing is sent. Failures are returned for the log, never fatal: the
/// relay works the same without a service manager.
enum SystemdNotify {
    static func send(_ state: String, socketName: String?) -> String? {
        guard let socketName, !socketName.isEmpty else { return nil }
        var pathBytes = Array(socketName.utf8)
        guard pathBytes.first == UInt8(ascii: "/") || pathBytes.first == UInt8(ascii: "@") else {
            return "NOTIFY_SOCKET '\(socketName)' is neither a path nor an abstract name"
        }
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return "NOTIFY_SOCKET is longer than \(capacity - 1) bytes" }
        // An abstract socket's name starts with a NUL byte instead of `@`
        // and is not NUL-terminated (its length is in the address length).
        let isAbstract = pathBytes[0] == UInt8(ascii: "@")
        if isAbstract { pathBytes[0] = 0 }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            for (index, byte) in pathBytes.enumerated() { path[index] = byte }
        }
        let length = MemoryLayout<sa_family_t>.size + pathBytes.count + (isAbstract ? 0 : 1)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return "NOTIFY_SOCKET: socket failed, errno \(errno)" }
        defer { close(descriptor) }
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { bytes in
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), socketAddress,
                           socklen_t(length))
                }
            }
        }
        return sent == message.count ? nil : "NOTIFY_SOCKET \(socketName): sendto failed, errno \(errno)"
    }
}
