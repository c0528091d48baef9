import CEventLoop
import Glibc

/// Why a child process could not be started: fork(2)'s errno.
public struct ChildProcessError: Error, Equatable, Sendable, CustomStringConvertible {
    public let errno: Int32

    public var description: String { "fork failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// Starts the executable at `path` with `arguments` (argv[0] first) as a
/// child that dies with this process: the kernel sends it
/// `parentDeathSignal` when the thread that started it ends (prctl(2)'s
/// PR_SET_PDEATHSIG, which follows the thread, not the process: start it
/// from the main thread, which lasts as long as the process), however this
/// process ends, SIGKILL included. Its standard output is `standardOutput`;
/// its signal mask is emptied (a daemon blocks the signals it waits for,
/// and a mask survives exec); it leads a process group of its own, so the
/// terminal's Ctrl-C reaches only the parent, which stops the child in its
/// turn. Environment, standard input and error are this process's. A child
/// that cannot exec exits with status 127.
public func spawnChildDyingWithParent(path: String, arguments: [String], standardOutput: Int32,
                                      parentDeathSignal: Int32) throws(ChildProcessError) -> pid_t {
    // The C strings are made before the fork: the child only reads them.
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let pid = path.withCString { shim_spawn_dying_with_parent($0, &argv, standardOutput, parentDeathSignal) }
    guard pid > 0 else { throw ChildProcessError(errno: errno) }
    return pid
}
