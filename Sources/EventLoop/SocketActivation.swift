import Glibc

// systemd's socket activation (sd_listen_fds(3), systemd.socket(5)): the
// service manager binds the listening sockets, keeps them across restarts of
// the service, and hands them to each process it starts as descriptors 3,
// 4, … with LISTEN_PID (the process they are for), LISTEN_FDS (how many) and
// LISTEN_FDNAMES (a name for each, `FileDescriptorName=`). Read here without
// libsystemd, with its semantics: a LISTEN_PID that is not this process
// means the variables were inherited from a parent and are not ours.

/// A listening socket a service manager passed to this process, by the
/// name its `.socket` unit gives it.
public struct PassedSocket: Equatable, Sendable {
    public var fileDescriptor: Int32
    public var name: String

    public init(fileDescriptor: Int32, name: String) {
        self.fileDescriptor = fileDescriptor
        self.name = name
    }
}

/// Why the passed sockets cannot be used: one line naming the variable or
/// the socket, and what to change.
public struct SocketActivationError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

public enum SocketActivation {
    /// The first passed descriptor (SD_LISTEN_FDS_START).
    public static let firstDescriptor: Int32 = 3
    /// The variables of the protocol; a process that read them unsets them,
    /// so that its own children do not take them for theirs.
    public static let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]

    /// What the environment says was passed.
    public enum Passed: Equatable, Sendable {
        /// No LISTEN_PID or no LISTEN_FDS: the process binds its own sockets.
        case none
        /// LISTEN_PID names another process (this one inherited the
        /// variables): nothing was passed to this one.
        case forAnotherProcess(Int32)
        /// One socket per name, in descriptor order.
        case sockets([PassedSocket])
    }

    /// The sockets `environment` says were passed to process `processID`,
    /// each named one of `knownNames` (distinct). Pure: the descriptors are
    /// not looked at (`Socket(passedListener:name:)` checks each).
    /// Throws for a malformed LISTEN_PID or LISTEN_FDS, more sockets than
    /// `knownNames`, a name count that differs from LISTEN_FDS, a name not
    /// in `knownNames` (no LISTEN_FDNAMES: systemd's `unknown` for each),
    /// and a name given twice.
    public static func passedSockets(environment: [String: String], processID: Int32,
                                     knownNames: [String]) throws(SocketActivationError) -> Passed {
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else {
            return .none
        }
        guard let pid = decimal(pidText, upTo: Int(Int32.max)), pid > 0 else {
            throw SocketActivationError("LISTEN_PID: \(shown(pidText)) is not a process id")
        }
        guard Int32(pid) == processID else { return .forAnotherProcess(Int32(pid)) }
        let known = knownNames.map { "`\($0)`" }.joined(separator: ", ")
        guard let count = decimal(countText, upTo: Int(Int32.max)), count > 0 else {
            throw SocketActivationError("LISTEN_FDS: \(shown(countText)) is not a number of sockets (1 or more)")
        }
        guard count <= knownNames.count else {
            throw SocketActivationError("LISTEN_FDS: \(count) sockets passed; the relay takes at most "
                + "\(knownNames.count), one each named \(known)")
        }
        // No names: systemd calls each `unknown` (sd_listen_fds_with_names).
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) }
            ?? Array(repeating: "unknown", count: count)
        guard names.count == count else {
            throw SocketActivationError("LISTEN_FDNAMES: \(names.count) names for the \(count) sockets of LISTEN_FDS")
        }
        var sockets: [PassedSocket] = []
        for (index, name) in names.enumerated() {
            let descriptor = firstDescriptor + Int32(index)
            guard knownNames.contains(name) else {
                throw SocketActivationError("socket \(descriptor) is named \(shown(name)); the relay takes sockets "
                    + "named \(known): set FileDescriptorName= in its .socket unit")
            }
            guard !sockets.contains(where: { $0.name == name }) else {
                throw SocketActivationError("LISTEN_FDNAMES: two sockets are named `\(name)`; each listener takes one")
            }
            sockets.append(PassedSocket(fileDescriptor: descriptor, name: name))
        }
        return .sockets(sockets)
    }

    /// A decimal number of ASCII digits only (no sign, no space), at most
    /// `limit`; nil otherwise.
    static func decimal(_ text: String, upTo limit: Int) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 12, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), value <= limit else { return nil }
        return value
    }

    /// Hostile text as an error line may show it: quoted, at most 64
    /// characters, anything but printable ASCII escaped.
    static func shown(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(64) {
            if scalar.value >= 0x20 && scalar.value < 0x7F && scalar != "\\" && scalar != "\"" {
                out.unicodeScalars.append(scalar)
            } else {
                out += scalar.escaped(asASCII: true)
            }
        }
        return "\"" + out + (text.unicodeScalars.count > 64 ? "…" : "") + "\""
    }
}

extension Socket {
    /// Adopts descriptor `fileDescriptor`, passed by the service manager as
    /// socket `name`, once it is checked to be what a listener accepts on:
    /// an open, listening TCP stream socket (IPv4 or IPv6). It is made
    /// close-on-exec (sd_listen_fds does the same: children must not keep
    /// it) and non-blocking (several loops accept on it: one that loses the
    /// race must get EAGAIN, not block). Both are flags of the open file,
    /// which the manager shares; neither matters to it, as it only polls.
    public convenience init(passedListener fileDescriptor: Int32, name: String) throws(SocketActivationError) {
        let socket = "socket \(fileDescriptor) (`\(name)`)"
        let descriptorFlags = fcntl(fileDescriptor, F_GETFD)
        guard descriptorFlags >= 0 else {
            throw SocketActivationError("\(socket): not an open descriptor (LISTEN_FDS counts more sockets than were passed)")
        }
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fileDescriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        guard let type = option(SO_TYPE) else {
            throw SocketActivationError("\(socket): not a socket")
        }
        guard type == Int32(SOCK_STREAM.rawValue) else {
            throw SocketActivationError("\(socket): not a stream socket (ListenStream= in its .socket unit)")
        }
        guard let domain = option(SO_DOMAIN), domain == AF_INET || domain == AF_INET6 else {
            throw SocketActivationError("\(socket): not a TCP socket; the relay listens on TCP only "
                + "(ListenStream=[ADDRESS:]PORT)")
        }
        guard option(SO_ACCEPTCONN) == 1 else {
            throw SocketActivationError("\(socket): not listening (a connection, as Accept=yes passes; "
                + "the relay needs Accept=no)")
        }
        let statusFlags = fcntl(fileDescriptor, F_GETFL)
        guard fcntl(fileDescriptor, F_SETFD, descriptorFlags | FD_CLOEXEC) == 0, statusFlags >= 0,
              fcntl(fileDescriptor, F_SETFL, statusFlags | O_NONBLOCK) == 0 else {
            throw SocketActivationError("\(socket): cannot set its flags: \(String(cString: strerror(errno)))")
        }
        self.init(adopting: fileDescriptor)
    }

    /// A second descriptor for this socket (close-on-exec), closed on its
    /// own: closing one leaves the socket open through the other.
    public func duplicate() throws(SocketError) -> Socket {
        let copy = fcntl(fileDescriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw SocketError(.socket, errno: errno) }
        return Socket(adopting: copy)
    }
}
