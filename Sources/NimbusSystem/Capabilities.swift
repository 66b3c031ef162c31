import CNimbus
import Glibc
import NimbusVocabulary

/// The daemon's privilege (DESIGN §5): real-name placeholders need `CAP_SYS_ADMIN` for one
/// call, `fanotify_init` (`FanotifyGroup.init`). Marks, events and answers need nothing more,
/// so the daemon drops every capability right after, before it reads any configuration,
/// journal or file.
///
/// Linux keeps capabilities per thread: `dropAll` changes the calling thread only. A process
/// drops them for good by calling it while it has one thread (`dropAllInProcess` checks).
public enum Capabilities {
    /// The capability number of `CAP_SYS_ADMIN`.
    public static let systemAdministration = CNIMBUS_CAP_SYS_ADMIN
    static let setCapabilities: Int32 = 8  // CAP_SETPCAP: needed to empty the bounding set

    /// True when the calling thread holds `capability` in its effective set.
    public static func hasEffective(_ capability: Int32) -> Bool {
        guard let sets = try? Sys.capget() else { return false }
        return sets.effective & (1 << UInt64(capability)) != 0
    }

    /// Makes `capability` effective when it is permitted but not yet effective (a binary
    /// given `cap_sys_admin+p` by `setcap`); false when it is not permitted at all.
    public static func raise(_ capability: Int32) throws -> Bool {
        let sets = try Sys.capget()
        let bit: UInt64 = 1 << UInt64(capability)
        guard sets.permitted & bit != 0 else { return false }
        if sets.effective & bit == 0 {
            try Sys.capset(effective: sets.effective | bit, permitted: sets.permitted, inheritable: sets.inheritable)
        }
        return true
    }

    /// Drops every capability of the calling thread for good: the ambient set cleared, the
    /// bounding set emptied (when `CAP_SETPCAP` allows; `no_new_privs` covers execve
    /// otherwise), `no_new_privs` set so no later execve can gain any (setuid binaries, file
    /// capabilities), then effective, permitted and inheritable emptied.
    public static func dropAll() throws {
        _ = try attributing("prctl", "PR_CAP_AMBIENT_CLEAR_ALL") {
            try Sys.prctl(CNIMBUS_PR_CAP_AMBIENT, CNIMBUS_PR_CAP_AMBIENT_CLEAR_ALL)
        }
        if hasEffective(setCapabilities) {
            for capability in 0...lastCapability {
                try attributing("prctl", "PR_CAPBSET_DROP \(capability)") {
                    do {
                        try Sys.prctl(CNIMBUS_PR_CAPBSET_DROP, UInt(capability))
                    } catch let error as Errno where error == .invalidArgument {
                        // A capability this kernel does not know: nothing to drop.
                    }
                }
            }
        }
        _ = try attributing("prctl", "PR_SET_NO_NEW_PRIVS") { try Sys.prctl(CNIMBUS_PR_SET_NO_NEW_PRIVS, 1) }
        // Nothing held, nothing to clear: the user units' seccomp filter (~@privileged) refuses
        // capset itself, which would turn a daemon without any capability into a warning.
        if let sets = try? Sys.capget(), sets.effective == 0, sets.permitted == 0, sets.inheritable == 0 { return }
        try attributing("capset", "(all capabilities)") { try Sys.capset(effective: 0, permitted: 0, inheritable: 0) }
    }

    /// Makes the process non-dumpable, so that no process without `CAP_SYS_PTRACE` can ptrace
    /// it, read its memory or copy its descriptors with `pidfd_getfd`, not even one of the same
    /// user: the fanotify group of a daemon started with an ambient capability (a system unit
    /// with `User=`) stays the daemon's. (An exec with ambient capabilities leaves a process
    /// dumpable.) The corresponding C call is `prctl(PR_SET_DUMPABLE, 0)`.
    public static func forbidTracing() throws {
        _ = try attributing("prctl", "PR_SET_DUMPABLE 0") { try Sys.prctl(CNIMBUS_PR_SET_DUMPABLE, 0) }
    }

    /// `dropAll` for the whole process: refuses (`EBUSY`) when the process already has more
    /// than one thread, whose capabilities it could not reach.
    public static func dropAllInProcess() throws {
        let threads = try threadCount()
        guard threads == 1 else {
            throw SystemError(.busy, "drop capabilities (\(threads) threads running)", "/proc/self/task")
        }
        try dropAll()
    }

    /// The number of threads of this process. The C function is `readdir` of /proc/self/task.
    public static func threadCount() throws -> Int {
        let task = try FileDescriptor.open("/proc/self/task", [.directory])
        let stream = try Sys.openDirectoryStream(task.rawValue)
        defer { try? Sys.closeDirectoryStream(stream) }
        var count = 0
        while let entry = try Sys.readDirectoryEntry(stream) {
            if entry.name.first != UInt8(ascii: ".") { count += 1 }
        }
        return count
    }

    /// The highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap).
    static var lastCapability: Int32 {
        guard let file = try? FileDescriptor.open("/proc/sys/kernel/cap_last_cap"),
              let bytes = try? file.closeAfter({ try file.readAll() }),
              let number = Int32(String(decoding: bytes, as: UTF8.self).filter(\.isNumber)) else { return 63 }
        return number
    }

    /// The capability lines of a thread's status (`/proc/thread-self/status` by default, or
    /// `/proc/PID/status`), as the kernel reports them.
    public struct Status: Hashable, Sendable {
        public var effective: UInt64 = 0
        public var permitted: UInt64 = 0
        public var inheritable: UInt64 = 0
        public var bounding: UInt64 = 0
        public var ambient: UInt64 = 0
        public var noNewPrivileges = false

        public static func read(_ path: SystemPath = "/proc/thread-self/status") throws -> Status {
            let file = try attributing("open", path) { try FileDescriptor.open(path) }
            let bytes = try attributing("read", path) { try file.closeAfter { try file.readAll() } }
            return parse(String(decoding: bytes, as: UTF8.self))
        }

        static func parse(_ text: String) -> Status {
            var status = Status()
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let value = parts[1].trimmingCharacters(in: " \t")
                let hex = UInt64(value, radix: 16) ?? 0
                switch parts[0] {
                case "CapInh": status.inheritable = hex
                case "CapPrm": status.permitted = hex
                case "CapEff": status.effective = hex
                case "CapBnd": status.bounding = hex
                case "CapAmb": status.ambient = hex
                case "NoNewPrivs": status.noNewPrivileges = value == "1"
                default: continue
                }
            }
            return status
        }
    }
}

private extension Substring {
    func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
