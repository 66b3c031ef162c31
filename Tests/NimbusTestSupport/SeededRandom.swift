/// A small, fast random number generator whose whole future is fixed by its seed, so that a
/// failing simulation can be replayed from the seed it prints. The algorithm is SplitMix64
/// (Steele, Lea and Flood, 2014): one 64-bit counter and a bit mixer.
///
/// The output for a seed is part of the contract: changing the algorithm would make every
/// seed recorded in a bug report replay a different run.
public struct SeededRandom: RandomNumberGenerator, Sendable, Hashable {
    /// The seed this generator started from; print it when a run fails.
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// True with the given probability (0 never, 1 always).
    ///
    /// Built from the top 53 bits of one draw rather than `Double.random(in:using:)`, so that
    /// the answer for a seed cannot change with the standard library's implementation.
    public mutating func chance(_ probability: Double) -> Bool {
        let unit = Double(next() >> 11) * 0x1p-53
        return unit < probability
    }

    /// A number in 0..<bound (the remainder of one draw: the slight bias does not matter to a test).
    public mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// `count` bytes: each draw gives 8 (little-endian), the last draw as many as are left.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < count {
                var word = next()
                let n = min(8, count - offset)
                withUnsafeBytes(of: &word) { raw.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: n) }
                offset += n
            }
        }
        return result
    }
}
