// What checking one VAPID signature costs the relay (the budget: at most 40 µs
// of relay CPU per restricted notification): the thread's CPU time for
// SHA-256 of the key, for reading the key `k` into a verifier, and for one
// ES256 verify, each alone and all three together, as a push to a
// restricted endpoint needs them. Run it as a release build:
//   swift run -c release es256-verify [iterations]
// A benchmark, not a test: it prints figures and asserts only that the
// vector verifies (a broken verifier would be fast and wrong).
import Glibc
import TLS

// A VAPID JWT as pywebpush sends it, made once by py_vapid 1.9.6
// (`Vapid02().sign({"aud": "https://relay.example.net", "exp": 1900000000,
// "sub": "https://mastodon.example"})`): the signing input, `k` and r‖s.
let message = Array("eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3JlbGF5LmV4YW1wbGUubmV0IiwiZXhwIjoxOTAwMDAwMDAwLCJzdWIiOiJodHRwczovL21hc3RvZG9uLmV4YW1wbGUifQ".utf8)
let key = bytes(hex: "045d05aa6b2b15890887fa8562ef7f877a0b21ea43e1e66bb24936088d9f4a0e3c"
    + "b59a5a9e3fb1c571b5ea14073f578b9a519fb59ea9640763a3a22272d9abb790")
let signature = bytes(hex: "cfc3d1c9320d3dfa062105bfefb4aa971104621802c0b4d45bdd6696d7ef2922"
    + "dc8763a387f34b0bfc363ab683aa19ecccc832040ad1727111f1e48d07a68936")

func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
}

/// This thread's CPU time in nanoseconds (what the relay's loop thread
/// would spend; other threads and the clock's wall time do not count).
func threadCPUNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The median over `rounds` rounds of the CPU µs per call of `body`.
func measure(_ iterations: Int, rounds: Int = 5, _ body: () -> Bool) -> Double {
    var perCall: [Double] = []
    for _ in 0..<rounds {
        var ok = true
        let start = threadCPUNanoseconds()
        for _ in 0..<iterations { ok = body() && ok }
        let spent = threadCPUNanoseconds() - start
        precondition(ok, "the vector did not verify")
        perCall.append(Double(spent) / Double(iterations) / 1000)
    }
    return perCall.sorted()[rounds / 2]
}

let iterations = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 5_000
guard let verifier = try? ES256Verifier(uncompressedPublicKey: key) else {
    print("es256-verify: the benchmark's key is refused"); exit(1)
}
let expectedHash = SHA256.hash(key)
let results: [(String, Double)] = [
    ("SHA-256 of k (65 bytes)", measure(iterations * 10) { SHA256.hash(key) == expectedHash }),
    ("ES256Verifier(uncompressedPublicKey:)", measure(iterations) { (try? ES256Verifier(uncompressedPublicKey: key)) != nil }),
    ("verify (one key, reused)", measure(iterations) { verifier.verify(message, signature: signature) }),
    ("all three, as one restricted push", measure(iterations) {
        guard SHA256.hash(key) == expectedHash, let fresh = try? ES256Verifier(uncompressedPublicKey: key) else { return false }
        return fresh.verify(message, signature: signature)
    }),
]
print("es256-verify: thread CPU µs per call, median of 5 rounds of \(iterations) (SHA-256: \(iterations * 10))")
for (name, micros) in results {
    print("  \(name): \((micros * 10).rounded() / 10) µs")
}
