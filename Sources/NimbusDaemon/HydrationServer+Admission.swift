import NimbusSystem
import NimbusVocabulary
import Synchronization

/// Whether an open may fetch at all: room on the local disk, the program not refused, the
/// rate of fills within `rateLimit`.
extension HydrationServer {
    /// Why the local disk has no room for this fill within min-free-space, or nil.
    func shortOfSpace(_ file: FileDescriptor, _ placeholder: Placeholder) -> String? {
        let reserve = settings.withLock { $0.minFreeSpace }
        guard reserve > 0, let space = try? file.spaceInfo(), space.available - placeholder.cloud.size < reserve else { return nil }
        return "it needs \(placeholder.cloud.size) bytes, \(space.available) are free, and automatic downloads keep "
            + "min-free-space = \(reserve) bytes free"
    }

    /// Why this open may not fetch, or nil.
    func refusal(of event: FanotifyEvent, _ placeholder: Placeholder) -> Errno? {
        if event.pid == ProcessSupport.processID {
            log.debug("real-name placeholders: nimbusd itself opened the not-downloaded \(placeholder.path); refused")
            return .busy
        }
        let program = Self.programNames(of: event.pid)
        if let refused = program.first(where: { isRefused($0) }) {
            if refusedLogged.withLock({ $0.insert(refused).inserted }) {
                log.notice("\(refused) (pid \(event.pid)) opened the not-downloaded \(placeholder.path): refused, "
                           + "as every open by \(refused) will be (refused-programs)")
            }
            return .notPermitted
        }
        switch limiter.withLock({ $0.admit(now: now()) }) {
        case .allowed:
            return nil
        case .refused(let first):
            if first {
                let limit = settings.withLock { $0.rateLimit }
                log.warning("not-downloaded files are being opened faster than open-rate-limit = \(limit) a minute "
                            + "(\(program.first ?? "pid \(event.pid)") opened \(placeholder.path)): such opens fail "
                            + "with EAGAIN until it calms down; use 'nimbusctl download' for what you need")
                stormHandler.withLock { $0 }?(placeholder.path, limit, program.first)
            }
            return .wouldBlock
        }
    }

    /// `/proc/PID/comm` holds at most 15 bytes of the name ("tracker-miner-f"): a configured
    /// name matches its first 15 bytes there, or the executable's file name in full.
    private func isRefused(_ name: String) -> Bool {
        settings.withLock { settings in
            settings.refusedPrograms.contains(name) || settings.refusedPrograms.contains { $0.utf8.count > 15 && $0.utf8.prefix(15).elementsEqual(name.utf8) }
        }
    }

    /// The opener's `comm` and, where readable, its executable's file name.
    static func programNames(of pid: Int32) -> [String] {
        var names: [String] = []
        if let file = try? FileDescriptor.open(SystemPath("/proc/\(pid)/comm")),
           let bytes = try? file.closeAfter({ try file.readAll() }) {
            names.append(String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self))
        }
        if let target = try? FileDescriptor.currentDirectory.readSymlink(SystemPath("/proc/\(pid)/exe")),
           let slash = target.lastIndex(of: UInt8(ascii: "/")) {
            names.append(String(decoding: target[(slash + 1)...], as: UTF8.self))
        }
        return names
    }
}
