import Foundation
import Locking
import Testing

@Suite("The one lock type")
struct LockedTests {
    enum Refusal: Error, Equatable { case refused }

    @Test("withLock gives the body the value to change and returns what the body returns")
    func changesAndReturns() {
        let locked = Locked([1, 2])
        let count = locked.withLock { value -> Int in
            value.append(3)
            return value.count
        }
        #expect(count == 3)
        #expect(locked.withLock { $0 } == [1, 2, 3])
    }

    @Test("an error thrown by the body comes out typed, keeps what the body changed, and releases the lock")
    func throwsTypedAndReleases() {
        let locked = Locked(0)
        #expect(throws: Refusal.refused) {
            try locked.withLock { (value: inout Int) throws(Refusal) -> Void in
                value = 7
                throw .refused
            }
        }
        // Were the lock still held, this second withLock would never return.
        #expect(locked.withLock { $0 } == 7)
    }

    @Test("threads that increment at once lose no increment")
    func excludesOtherThreads() {
        let locked = Locked(0)
        let threads = 8, increments = 20_000
        // Plain threads, not tasks: contention is what is under test, and
        // DispatchQueue.concurrentPerform runs its iterations on real threads.
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<increments {
                locked.withLock { $0 += 1 }
            }
        }
        #expect(locked.withLock { $0 } == threads * increments)
    }
}
