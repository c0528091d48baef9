import Glibc

/// Kernel randomness (getrandom(2), the source of `SystemRandomNumberGenerator`)
/// fetched 4 KiB at a time through glibc's `arc4random_buf` (one getrandom
/// call per buffer): an apns-id needs 16 random bytes per request, and
/// `SystemRandomNumberGenerator`'s one system call per 8 bytes is two
/// syscalls per notification.
///
/// Not shared between threads: each loop's `WebPushHandler` owns one.
struct BufferedRandom: RandomNumberGenerator {
    private var words: [UInt64]
    private var index: Int

    static let wordsPerRefill = 512

    init() {
        words = [UInt64](repeating: 0, count: BufferedRandom.wordsPerRefill)
        index = BufferedRandom.wordsPerRefill
    }

    mutating func next() -> UInt64 {
        if index == words.count { refill() }
        let word = words[index]
        index += 1
        return word
    }

    private mutating func refill() {
        words.withUnsafeMutableBytes { buffer in
            // Never empty: `words` has wordsPerRefill elements.
            if let base = buffer.baseAddress { arc4random_buf(base, buffer.count) }
        }
        index = 0
    }
}
