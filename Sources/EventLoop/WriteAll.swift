import Glibc

/// Writes all of `text` to a blocking descriptor with write(2), retrying
/// after EINTR and short writes, giving up silently on any other error (a
/// closed stdout must not stop a daemon). For the executables' standard
/// streams, which tests and scripts read line by line from a pipe: one
/// write(2) per call keeps a line whole. Never for sockets on a loop.
public func writeAll(_ descriptor: Int32, _ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
