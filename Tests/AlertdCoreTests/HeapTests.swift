import AlertdCore
import Testing

@Suite("The deadline heap")
struct HeapTests {
    @Test("Elements come out smallest first, duplicates included")
    func order() {
        var heap = Heap<Int>()
        #expect(heap.isEmpty && heap.min == nil)
        let none = heap.popMin()
        #expect(none == nil)
        var values = (0..<300).map { $0 % 97 }
        values.shuffle()
        for value in values { heap.insert(value) }
        #expect(heap.count == 300)
        #expect(heap.min == 0)
        var out: [Int] = []
        while let value = heap.popMin() { out.append(value) }
        #expect(out == values.sorted())
        #expect(heap.isEmpty)
    }

    @Test("Inserting and popping interleaved keeps the order")
    func interleaved() {
        var heap = Heap<Int>()
        var model: [Int] = []
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            if Bool.random(using: &rng) || model.isEmpty {
                let value = Int.random(in: 0..<50, using: &rng)
                heap.insert(value)
                model.append(value)
            } else {
                let expected = model.min()!
                model.remove(at: model.firstIndex(of: expected)!)
                #expect(heap.popMin() == expected)
            }
            #expect(heap.min == model.min())
        }
    }
}
