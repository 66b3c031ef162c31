/// xxHash64 with seed 0, written from the published specification (XXH64, "xxHash fast
/// digest algorithm", version 0.1.1). Feed the input in chunks of any size with `update`,
/// then read the digest with `finalize`; the result does not depend on how it was chunked.
///
/// The input is consumed in 32-byte stripes, four 64-bit lanes each, one accumulator per lane;
/// the tail (< 32 bytes) waits in `pending` until more input or the end.
public struct XXHash64: Sendable {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5
    private static let stripe = 32

    private var accumulators: (UInt64, UInt64, UInt64, UInt64)
    /// Input not yet consumed: fewer than 32 bytes.
    private var pending: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var pendingCount = 0
    private var totalLength: UInt64 = 0

    public init() {
        accumulators = (Self.prime1 &+ Self.prime2, Self.prime2, 0, 0 &- Self.prime1)
    }

    /// The digest of `bytes` in one call.
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hasher = XXHash64()
        hasher.update(bytes)
        return hasher.finalize()
    }

    public static func hash(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { hash($0) }
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var input = bytes.baseAddress, !bytes.isEmpty else { return }
        var remaining = bytes.count
        totalLength &+= UInt64(remaining)

        if pendingCount > 0 {
            let taken = min(Self.stripe - pendingCount, remaining)
            let offset = pendingCount
            withUnsafeMutableBytes(of: &pending) {
                $0.baseAddress!.advanced(by: offset).copyMemory(from: input, byteCount: taken)
            }
            pendingCount += taken
            input += taken
            remaining -= taken
            guard pendingCount == Self.stripe else { return }
            let stripe = pending
            withUnsafeBytes(of: stripe) { consumeStripes($0.baseAddress!, count: 1) }
            pendingCount = 0
        }

        let stripes = remaining / Self.stripe
        if stripes > 0 {
            consumeStripes(input, count: stripes)
            input += stripes * Self.stripe
            remaining -= stripes * Self.stripe
        }
        if remaining > 0 {
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.copyMemory(from: input, byteCount: remaining) }
            pendingCount = remaining
        }
    }

    /// The digest of everything given to `update` so far. The hasher stays usable.
    public func finalize() -> UInt64 {
        var hash: UInt64
        if totalLength >= UInt64(Self.stripe) {
            let (a, b, c, d) = accumulators
            hash = a.rotatedLeft(1) &+ b.rotatedLeft(7) &+ c.rotatedLeft(12) &+ d.rotatedLeft(18)
            hash = Self.merge(hash, a)
            hash = Self.merge(hash, b)
            hash = Self.merge(hash, c)
            hash = Self.merge(hash, d)
        } else {
            hash = Self.prime5
        }
        hash &+= totalLength

        let count = pendingCount
        withUnsafeBytes(of: pending) { tail in
            let base = tail.baseAddress!
            var offset = 0
            while offset + 8 <= count {
                let lane = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                hash ^= Self.round(0, lane)
                hash = hash.rotatedLeft(27) &* Self.prime1 &+ Self.prime4
                offset += 8
            }
            if offset + 4 <= count {
                let lane = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                hash ^= lane &* Self.prime1
                hash = hash.rotatedLeft(23) &* Self.prime2 &+ Self.prime3
                offset += 4
            }
            while offset < count {
                hash ^= UInt64(tail[offset]) &* Self.prime5
                hash = hash.rotatedLeft(11) &* Self.prime1
                offset += 1
            }
        }

        hash ^= hash >> 33
        hash &*= Self.prime2
        hash ^= hash >> 29
        hash &*= Self.prime3
        hash ^= hash >> 32
        return hash
    }

    /// The hot loop: keeps the four accumulators in registers, loads lanes without bounds
    /// checks or alignment requirements.
    private mutating func consumeStripes(_ input: UnsafeRawPointer, count: Int) {
        var (a, b, c, d) = accumulators
        var position = input
        for _ in 0..<count {
            a = Self.round(a, UInt64(littleEndian: position.loadUnaligned(fromByteOffset: 0, as: UInt64.self)))
            b = Self.round(b, UInt64(littleEndian: position.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            c = Self.round(c, UInt64(littleEndian: position.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
            d = Self.round(d, UInt64(littleEndian: position.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
            position += Self.stripe
        }
        accumulators = (a, b, c, d)
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ lane: UInt64) -> UInt64 {
        (accumulator &+ lane &* prime2).rotatedLeft(31) &* prime1
    }

    @inline(__always)
    private static func merge(_ hash: UInt64, _ accumulator: UInt64) -> UInt64 {
        (hash ^ round(0, accumulator)) &* prime1 &+ prime4
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
