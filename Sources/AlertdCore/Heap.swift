/// A binary min-heap.
public struct Heap<Element: Comparable & Sendable>: Sendable {
    private var items: [Element] = []

    public init() {}

    public var count: Int { items.count }
    public var isEmpty: Bool { items.isEmpty }
    public var min: Element? { items.first }

    /// Drops spare storage (after a burst).
    public mutating func shrink() { if items.isEmpty { items = [] } }

    public mutating func insert(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    public mutating func popMin() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let result = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < items.count, items[left] < items[smallest] { smallest = left }
            if right < items.count, items[right] < items[smallest] { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return result
    }

    /// Takes out every element `shouldRemove` picks and returns them (in no particular
    /// order); the rest keep their heap order. O(n log n): for rare bulk changes.
    @discardableResult
    public mutating func removeAll(where shouldRemove: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept: [Element] = []
        for item in items {
            if shouldRemove(item) { removed.append(item) } else { kept.append(item) }
        }
        guard !removed.isEmpty else { return [] }
        items = []
        for item in kept { insert(item) }
        return removed
    }
}
