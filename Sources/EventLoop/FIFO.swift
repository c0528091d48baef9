/// A first-in first-out queue over one array: O(1) append, removal from the
/// front, and removal of any element by the position `append` returned
/// (it leaves a hole, which the front skips). The consumed front is dropped
/// in bulk, when the queue empties or once it is most of the array, so the
/// memory follows what is queued. For a loop's own queues: not thread-safe.
/// Inlinable, so the hot paths that use it (the APNs pool, once per
/// notification) get it specialized for their element type.
public struct FIFO<Element> {
    @usableFromInline var slots: [Element?] = []
    /// Index of the first element; every slot before it is consumed.
    @usableFromInline var head = 0
    /// Position of `slots[head]`: positions count appends since creation,
    /// so a position stays valid while the array is compacted.
    @usableFromInline var headPosition: UInt64 = 0
    @usableFromInline var queued = 0

    /// Elements queued (holes excluded).
    @inlinable public var count: Int { queued }

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { queued == 0 }

    /// The element appended first among those still queued.
    @inlinable public var first: Element? { head < slots.count ? slots[head] : nil }

    /// Appends `element`; returns its position for `remove(at:)`.
    @inlinable @discardableResult
    public mutating func append(_ element: Element) -> UInt64 {
        let position = headPosition &+ UInt64(slots.count - head)
        slots.append(element)
        queued += 1
        return position
    }

    @inlinable @discardableResult
    public mutating func popFirst() -> Element? {
        guard head < slots.count, let element = slots[head] else { return nil }
        slots[head] = nil
        queued -= 1
        dropConsumedFront()
        return element
    }

    /// Removes the element appended at `position`; nil (and nothing
    /// changes) when it was already removed.
    @inlinable @discardableResult
    public mutating func remove(at position: UInt64) -> Element? {
        guard position >= headPosition, position - headPosition < UInt64(slots.count - head) else { return nil }
        let index = head + Int(position - headPosition)
        guard let element = slots[index] else { return nil }
        slots[index] = nil
        queued -= 1
        if index == head { dropConsumedFront() }
        return element
    }

    /// Removes every element; positions handed out before stay unused.
    @inlinable public mutating func removeAll() {
        headPosition &+= UInt64(slots.count - head)
        slots.removeAll()
        head = 0
        queued = 0
    }

    @inlinable mutating func dropConsumedFront() {
        while head < slots.count, slots[head] == nil {
            head += 1
            headPosition &+= 1
        }
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
    }
}

/// The queued elements, first in first (holes skipped).
extension FIFO: Sequence {
    public struct Iterator: IteratorProtocol {
        @usableFromInline var slots: ArraySlice<Element?>

        @inlinable init(_ slots: ArraySlice<Element?>) { self.slots = slots }

        @inlinable public mutating func next() -> Element? {
            while let slot = slots.popFirst() {
                if let element = slot { return element }
            }
            return nil
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(slots[head...]) }

    @inlinable public var underestimatedCount: Int { queued }
}
