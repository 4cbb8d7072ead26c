/// A first-in, first-out queue with O(1) amortised push and pop (an array with a moving head).
struct FIFO<Element: Sendable>: Sendable {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    var first: Element? { head < storage.count ? storage[head] : nil }

    mutating func append(_ element: Element) { storage.append(element) }

    /// Puts `element` first (for resends, which go before new work).
    mutating func prepend(_ element: Element) {
        if head > 0 {
            head -= 1
            storage[head] = element
        } else {
            storage.insert(element, at: 0)
        }
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head >= 1024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        } else if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        }
        return element
    }

    /// Removes the elements for which `predicate` is true and returns them.
    mutating func removeAll(where predicate: (Element) -> Bool) -> [Element] {
        var kept: [Element] = []
        var removed: [Element] = []
        for element in storage[head...] {
            if predicate(element) { removed.append(element) } else { kept.append(element) }
        }
        storage = kept
        head = 0
        return removed
    }
}
