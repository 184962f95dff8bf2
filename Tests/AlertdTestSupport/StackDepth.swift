/// Where on its thread's stack the caller's frame is: two readings from calls made from the
/// same place differ only when something between grew deeper (``KeptClosure``: a closure
/// wrapped in one more thunk each time it was read back).
@inline(never)
public func stackAddress() -> Int {
    var marker = 0
    return withUnsafeMutablePointer(to: &marker) { Int(bitPattern: $0) }
}
