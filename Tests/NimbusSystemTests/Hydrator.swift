import Foundation
import Glibc
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusSystem
import NimbusTestSupport

/// The test's stand-in for the daemon's hydration server: knows which inode stands for which
/// cloud file, decides with `RealNamePlaceholderFile.decide`, fills, unmarks.
final class Hydrator: Sendable {
    struct Entry {
        var cloud: SystemPath
        var expected: FileMetadata
        var path: RelativePath
        var notDownloaded = true
    }

    let group: FanotifyGroup
    let fills = Mutex(0)
    let refusal = Mutex<Errno?>(nil)
    private let entries = Mutex<[UInt64: Entry]>([:])

    init(group: FanotifyGroup) { self.group = group }

    func register(inode: UInt64, cloud: SystemPath, expected: FileMetadata, path: RelativePath) {
        entries.withLock { $0[inode] = Entry(cloud: cloud, expected: expected, path: path) }
    }

    func expectNotDownloaded(inode: UInt64) {
        entries.withLock { $0[inode]?.notDownloaded = true }
    }

    func handle(_ event: FanotifyEvent) -> FanotifyResponse {
        guard let current = try? event.file.metadata(), let entry = entries.withLock({ $0[current.inode] }) else {
            return .allow
        }
        if let refusal = refusal.withLock({ $0 }) { return .deny(refusal) }
        let decision = RealNamePlaceholderFile.decide(notDownloaded: entry.notDownloaded, currentSize: current.size,
                                                      expectedSize: entry.expected.size)
        if decision == .fill {
            do {
                let cloud = try FileDescriptor.open(entry.cloud)
                try cloud.closeAfter {
                    try RealNamePlaceholderFile.fill(event.file, from: cloud, expected: entry.expected, path: entry.path,
                                                     state: ("user.nimbus.state", Array("downloaded".utf8)))
                }
            } catch {
                return .deny(.ioError)
            }
            fills.withLock { $0 += 1 }
            entries.withLock { $0[current.inode]?.notDownloaded = false }
        }
        try? group.unmark(file: event.file)
        return .allow
    }
}
