import Foundation
import NimbusVocabulary
import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon
import NimbusTestSupport

// On-demand mode in the simulation: the user's evicts and downloads, and placeholders checked
// against the cloud files they stand for.
extension SimulationRun {
    /// A user's evict or download of a random path; refusals (not in sync…) are fine, lost
    /// content is not.
    mutating func evictOrDownload(_ step: Int) throws {
        guard let path = existingPath(in: localDisk) else { return }
        let target = style.target(of: path) ?? path
        let before = preciousContents()
        if Bool.random(using: &random) { _ = try? engine.evict(target) } else { _ = try? engine.download(target, .explicit) }
        let lost = Set(before.keys).subtracting(allContents.keys)
        guard lost.isEmpty else { throw HarnessFailure("step \(step): evict/download of \(target) lost \(lost.sorted()); before \(before); after \(allContents); local \(localDisk.snapshot().keys.sorted())") }
    }

    /// Each local placeholder must stand for a cloud file of its size; both are then left out
    /// of the comparison of the two sides.
    func matchPlaceholders(_ local: inout [RelativePath: String], _ cloud: inout [RelativePath: String]) throws {
        let records = engine.records
        for (path, node) in localDisk.snapshot() {
            guard case .file(let bytes) = node.content else { continue }
            let target: RelativePath
            let info: (size: Int64, name: String)
            switch style {
            case .suffix:
                guard let named = Placeholder.target(of: path), let parsed = Placeholder.parse(bytes) else { continue }
                (target, info) = (named, parsed)
            case .realName:
                guard let record = records[path], record.isPlaceholder else { continue }
                (target, info) = (path, (record.base.cloud.size, ""))
            }
            guard case .file(let content)? = cloudDisk.snapshot()[target]?.content, Int64(content.count) == info.size else {
                throw HarnessFailure("placeholder \(path) stands for no cloud file of \(info.size) bytes")
            }
            local[path] = nil
            cloud[target] = nil
        }
    }
}
