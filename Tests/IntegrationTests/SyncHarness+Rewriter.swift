import Foundation
import Glibc
import NimbusTestSupport

/// Self-checking file content: a body of 8-byte words followed by a 24-byte trailer holding a
/// magic number, the body's length and its checksum. Any mix of two versions, a truncated copy
/// or a copy taken in the middle of a write fails the check.
enum SyncSelfChecking {
    static let magic: UInt64 = 0x4E49_4D42_5553_5631  // "NIMBUSV1"

    enum Verdict: Equatable {
        case whole(checksum: UInt64)
        case torn(String)
    }

    static func checksum(_ body: ArraySlice<UInt8>) -> UInt64 {
        body.withUnsafeBytes { raw in
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            var offset = 0
            while offset + 8 <= raw.count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x0000_0100_0000_01B3
                hash ^= hash >> 29
                offset += 8
            }
            return hash ^ UInt64(raw.count)
        }
    }

    static func trailer(for body: [UInt8]) -> [UInt8] {
        let words = [magic, UInt64(body.count), checksum(body[...])]
        return words.withUnsafeBytes { Array($0) }
    }

    static func validate(_ bytes: [UInt8]) -> Verdict {
        guard bytes.count >= 24, (bytes.count - 24) % 8 == 0 else { return .torn("size \(bytes.count) is not a body of words plus a trailer") }
        let words = bytes[(bytes.count - 24)...].withUnsafeBytes { raw in
            (0..<3).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self) }
        }
        guard words[0] == magic else { return .torn("size \(bytes.count): no trailer at the end") }
        guard words[1] == UInt64(bytes.count - 24) else { return .torn("size \(bytes.count): the trailer is for a body of \(words[1]) bytes") }
        let actual = checksum(bytes[..<(bytes.count - 24)])
        guard words[2] == actual else { return .torn("size \(bytes.count): checksum \(actual), the trailer says \(words[2])") }
        return .whole(checksum: actual)
    }
}

/// Rewrites a file from a background thread, closing it after each version: whole rewrites,
/// same-size overwrites in place and appends, written in chunks so that an upload overlaps them.
/// Who owns what: its thread and the test share the `var`s below only under `lock`.
final class SyncRewriter: @unchecked Sendable {
    let path: [UInt8]
    let seed: UInt64
    private let lock = NSLock()
    private var written: Set<UInt64> = []
    private var counts: [String: Int] = [:]
    private var done = false
    private var problem: String?

    init(path: [UInt8], seed: UInt64) {
        self.path = path
        self.seed = seed
    }

    var isDone: Bool { lock.withLock { done } }
    var failure: String? { lock.withLock { problem } }
    func writtenChecksums() -> Set<UInt64> { lock.withLock { written } }
    func summary() -> String { lock.withLock { counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") } }

    func start(for duration: Duration) {
        let thread = Thread { [self] in
            do { try run(until: ContinuousClock.now + duration) } catch { lock.withLock { problem = "\(error)" } }
            lock.withLock { done = true }
        }
        thread.name = "sync-rewriter"
        thread.start()
    }

    private func run(until end: ContinuousClock.Instant) throws {
        var random = SeededRandom(seed: seed)
        var body: [UInt8] = []
        var first = true
        while first || ContinuousClock.now < end {
            let choice = first || body.count > 6 << 20 ? 0 : Int.random(in: 0..<3, using: &random)
            first = false
            let fd: Int32
            switch choice {
            case 0:  // a whole rewrite, truncating first
                body = random.bytes(8 * Int.random(in: (128 << 10)...(384 << 10), using: &random))
                fd = SyncFiles.call("open", path) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
                try SyncFiles.check(fd, "open", path)
                try chunked(fd, body, at: 0, &random)
            case 1:  // the same size, overwritten in place
                body = random.bytes(body.count)
                fd = SyncFiles.call("open", path) { open($0, O_WRONLY | O_CLOEXEC) }
                try SyncFiles.check(fd, "open", path)
                try chunked(fd, body, at: 0, &random)
            default:  // appended: the trailer is cut off, more body and a new trailer follow
                let extra = random.bytes(8 * Int.random(in: (8 << 10)...(64 << 10), using: &random))
                fd = SyncFiles.call("open", path) { open($0, O_WRONLY | O_CLOEXEC) }
                try SyncFiles.check(fd, "open", path)
                try SyncFiles.check(ftruncate(fd, off_t(body.count)), "ftruncate", path)
                try chunked(fd, extra, at: body.count, &random)
                body += extra
            }
            try chunked(fd, SyncSelfChecking.trailer(for: body), at: body.count, &random)
            close(fd)
            let sum = SyncSelfChecking.checksum(body[...])
            lock.withLock {
                written.insert(sum)
                counts[["rewrites", "overwrites in place", "appends"][choice], default: 0] += 1
            }
            usleep(UInt32.random(in: 0...60_000, using: &random))  // shapes the workload, not a wait
        }
    }

    private func chunked(_ fd: Int32, _ bytes: [UInt8], at offset: Int, _ random: inout SeededRandom) throws {
        var done = 0
        while done < bytes.count {
            let n = min(256 << 10, bytes.count - done)
            let wrote = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, n, off_t(offset + done)) }
            try SyncFiles.check(wrote < 0 ? -1 : 0, "pwrite", path)
            done += wrote
            if Bool.random(using: &random) { usleep(300) }
        }
    }
}

/// Reads a cloud file over and over from a background thread and checks every state it sees.
/// Who owns what: its thread and the test share the `var`s below only under `lock`.
final class SyncCloudObserver: @unchecked Sendable {
    let path: [UInt8]
    private let lock = NSLock()
    private var stopping = false
    private var done = false
    private var reads = 0
    private var valid: Set<UInt64> = []
    private var torn: [String] = []

    init(path: [UInt8]) { self.path = path }

    var isDone: Bool { lock.withLock { done } }
    func stop() { lock.withLock { stopping = true } }
    func report() -> (reads: Int, valid: Set<UInt64>, torn: [String]) { lock.withLock { (reads, valid, torn) } }

    func start() {
        let thread = Thread { [self] in
            while !lock.withLock({ stopping }) {
                let bytes = try? SyncFiles.read(path)
                guard let bytes else { usleep(1000); continue }
                let verdict = SyncSelfChecking.validate(bytes)
                lock.withLock {
                    reads += 1
                    switch verdict {
                    case .whole(let sum): valid.insert(sum)
                    case .torn(let reason): if torn.count < 20 { torn.append(reason) }
                    }
                }
            }
            lock.withLock { done = true }
        }
        thread.name = "sync-cloud-observer"
        thread.start()
    }
}
