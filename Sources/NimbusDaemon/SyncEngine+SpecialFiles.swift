import NimbusCore
import NimbusVocabulary

/// Special files (fifos, sockets, devices) are never synced (DESIGN §4), and the log says so
/// once per file: every pass that looks at their folder skips them again, and a fifo beside
/// an often-saved file was logged at each save. Told again when it changes (another inode or
/// another side), when it comes back after it was gone, and after a restart.
extension SyncEngine {
    /// Which special files were told about at a path: their inodes on each side.
    struct ToldSpecialFile: Hashable {
        var local: UInt64?
        var cloud: UInt64?
    }

    /// Logs the special files of this pass's plan not told about yet (or changed since), and
    /// forgets those told about within `scope` that are no longer there.
    func tellSkipped(_ skipped: [RelativePath], _ views: Views, scope: [RelativePath]) {
        var current: [RelativePath: ToldSpecialFile] = [:]
        for path in skipped where views.base[path] == nil {
            current[path] = ToldSpecialFile(local: views.local[path].flatMap { $0.kind == .special ? $0.inode : nil },
                                            cloud: views.cloud[path].flatMap { $0.kind == .special ? $0.inode : nil })
        }
        let toTell = state.withLock { s -> [RelativePath] in
            if !s.toldSpecialFiles.isEmpty {
                s.toldSpecialFiles = s.toldSpecialFiles.filter { path, _ in
                    current[path] != nil || !scope.contains { $0.contains(path) }
                }
            }
            return current.filter { path, told in s.toldSpecialFiles.updateValue(told, forKey: path) != told }.keys.sorted()
        }
        for path in toTell { log.info("skipping \(path): special files (fifos, sockets, devices) are not synced") }
    }
}
