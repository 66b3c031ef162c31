import Foundation
import Glibc
import NimbusVocabulary
import Synchronization
@testable import NimbusSystem

/// Whether this machine can run the real-name placeholder tests, and why not when it cannot:
/// they need root (`CAP_SYS_ADMIN` for the group), a kernel with pre-content events (Linux
/// ≥ 6.14) and a scratch directory on a filesystem that accepts them (ext4, xfs, btrfs: not
/// tmpfs). The scratch directories live under /var/tmp, on the root filesystem on most machines.
enum FanotifySupport {
    static let base = "/var/tmp"

    static let skipReason: String? = probe()
    static var available: Bool { skipReason == nil }

    private static func probe() -> String? {
        guard geteuid() == 0 else { return "skipped: a pre-content fanotify group needs root (CAP_SYS_ADMIN)" }
        do {
            let group = try FanotifyGroup()
            defer { try? group.close() }
            return try FanotifyScratch.with { scratch in
                try scratch.write("probe", [])
                do {
                    try group.mark("probe", in: scratch.directory)
                    return nil
                } catch let error as Errno where error == .invalidArgument {
                    return "skipped: this kernel (\(kernelRelease)) has no fanotify pre-content events (Linux 6.14 or later)"
                } catch let error as Errno where error == .notSupported {
                    return "skipped: the filesystem of \(base) does not accept fanotify pre-content marks (tmpfs?)"
                }
            }
        } catch {
            return "skipped: cannot create a pre-content fanotify group: \(error)"
        }
    }

    static var kernelRelease: String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

/// A fresh directory under `FanotifySupport.base`, removed afterwards.
enum FanotifyScratch {
    static func with<R>(_ body: (Scratch) throws -> R) throws -> R {
        try Scratch.with(base: FanotifySupport.base, body)
    }
}

/// Answers a group's events on a thread of its own, as the daemon's hydration server does,
/// with whatever `handle` decides; every event's descriptor is closed after the answer.
final class Responder: Sendable {
    let group: FanotifyGroup
    private let handle: @Sendable (FanotifyEvent) -> FanotifyResponse
    private let stopping = Mutex(false)
    private let finished = DispatchSemaphore(value: 0)
    let seen = Mutex<[FanotifyEvents]>([])

    init(group: FanotifyGroup, handle: @escaping @Sendable (FanotifyEvent) -> FanotifyResponse) {
        self.group = group
        self.handle = handle
        let thread = Thread { [self] in run() }
        thread.start()
    }

    private func run() {
        defer { finished.signal() }
        while !stopping.withLock({ $0 }) {
            guard (try? group.waitForEvents(within: .milliseconds(50))) == true,
                  let events = try? group.readEvents() else { continue }
            for event in events {
                seen.withLock { $0.append(event.events) }
                if event.needsResponse {
                    let response = handle(event)
                    try? group.respond(to: event, response)
                }
                if event.file.rawValue >= 0 { try? event.file.close() }
            }
        }
    }

    /// Stops the thread and closes the group (the kernel allows whatever was still waiting).
    func stop() {
        stopping.withLock { $0 = true }
        finished.wait()
        try? group.close()
    }
}

/// Single quotes for /bin/sh.
func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
