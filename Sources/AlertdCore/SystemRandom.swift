/// The system's random numbers (`SystemRandomNumberGenerator`) in a type that is
/// not empty, for passing `inout` to generic code such as `Double.random(in:using:)`.
///
/// Why not `SystemRandomNumberGenerator` itself: under ThreadSanitizer, the
/// toolchain instruments an `inout` access to a value of an empty type passed to a
/// generic function at a meaningless address, and TSan reports a race on it and
/// then crashes (swiftlang/swift#66099). The stored word is never read; the numbers
/// are the system generator's. Without TSan the two are the same.
public struct SystemRandom: RandomNumberGenerator, Sendable {
    private var system = SystemRandomNumberGenerator()
    private var nonEmpty: UInt8 = 0

    public init() {}

    public mutating func next() -> UInt64 { system.next() }
}
