import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// nimbusd's privilege (DESIGN §5). Real-name placeholders need one privileged call,
/// `fanotify_init` of a pre-content group (`CAP_SYS_ADMIN`); everything after it (marks,
/// events, answers) needs none. So the first thing nimbusd does, before it reads its
/// configuration, journal or any file, is: make `CAP_SYS_ADMIN` effective if it is permitted
/// (a root daemon, a system unit's `AmbientCapabilities=`, or `setcap cap_sys_admin+p`),
/// create the group, and drop every capability for good (`Capabilities.dropAll`).
/// Without the privilege there is no group, and on-demand pairs use suffix placeholders;
/// `unavailableReason` says why, for `status` and the log.
public struct DaemonPrivilege: Sendable {
    public let group: FanotifyGroup?
    public let unavailableReason: String?
    /// Whether capabilities were held at start and dropped (or none were held).
    public let dropped: Result<Void, SystemError>
    /// When the group was the one systemd kept for this unit across the last daemon's end:
    /// how many of that daemon's fetches were cut short and refused with EIO.
    public var tookOver: Int? = nil

    /// Acquires the group and drops every capability. Must run while the process has one
    /// thread: capabilities belong to threads, and a thread started earlier would keep them.
    public static func acquire(environment: [String: String]) -> DaemonPrivilege {
        var group: FanotifyGroup?
        var reason: String?
        var tookOver: Int?
        if let kept = SystemdDescriptors.named(SystemdDescriptors.fanotifyGroupName, environment: environment) {
            // The group of the daemon before this one, kept by systemd (FDSTORE=1): its marks
            // held, and programs that opened a not-downloaded file since wait for us.
            if let inherited = FanotifyGroup.takeOver(kept), (try? Capabilities.forbidTracing()) != nil {
                group = inherited
                tookOver = inherited.denyAbandonedEvents(below: ProcessSupport.openFileLimit)
            } else {
                try? kept.close()
            }
        }
        if group != nil {
            // Nothing to create: no capability needed.
        } else if (try? Capabilities.raise(Capabilities.systemAdministration)) == true {
            do {
                group = try FanotifyGroup()
            } catch {
                reason = "fanotify_init of a pre-content group failed: \(error)"
            }
            // The group outlives the capability: no other process of this user may take it.
            do {
                if group != nil { try Capabilities.forbidTracing() }
            } catch {
                try? group?.close()
                group = nil
                reason = "nimbusd could not make itself non-dumpable, which keeps its fanotify group its own: \(error)"
            }
        } else {
            reason = "nimbusd does not have CAP_SYS_ADMIN, which creating the pre-content fanotify group needs "
                + "(see nimbusd(8), PRIVILEGE)"
        }
        let dropped: Result<Void, SystemError>
        do {
            try Capabilities.dropAllInProcess()
            dropped = .success(())
        } catch let error as SystemError {
            dropped = .failure(error)
        } catch {
            dropped = .failure(SystemError(.invalidArgument, "drop capabilities", "\(error)"))
        }
        if case .failure = dropped {
            // Never keep a privilege that could not be dropped on every thread.
            try? group?.close()
            return DaemonPrivilege(group: nil, unavailableReason: "capabilities could not be dropped", dropped: dropped)
        }
        var privilege = DaemonPrivilege(group: group, unavailableReason: group == nil ? reason : nil, dropped: dropped)
        privilege.tookOver = tookOver
        return privilege
    }

    /// Whether `directory` (the local root) accepts pre-content marks: nil when it does, else
    /// why not (kernel older than 6.14, or a filesystem without them such as tmpfs or NFS).
    /// Tries on a temporary file, removed again.
    public static func probe(_ group: FanotifyGroup, localRoot directory: FileDescriptor) -> String? {
        let name = SystemPath(bytes: TemporaryName.prefix + Array("probe-\(ProcessSupport.processID)".utf8))
        do {
            let file = try FileDescriptor.open(name, [.readWrite, .create, .exclusive], permissions: 0o600,
                                               relativeTo: directory)
            try? file.close()
        } catch {
            return "cannot create a file in the local folder to try a mark: \(error)"
        }
        defer { try? directory.removeFile(name) }
        do {
            try group.mark(name, in: directory)
            try? group.unmark(name, in: directory)
            return nil
        } catch let error as Errno where error == .invalidArgument {
            return "this kernel (\(ProcessSupport.kernelRelease)) has no fanotify pre-content events (Linux 6.14 or later)"
        } catch let error as Errno where error == .notSupported {
            return "the local folder's filesystem does not offer fanotify pre-content events (ext4, xfs and btrfs do; tmpfs, NFS and FUSE do not)"
        } catch {
            return "cannot mark a file of the local folder: \(error)"
        }
    }

}

/// Which placeholder style a pair uses and why, for `status` and the log (DESIGN §5).
public struct PlaceholderStyleReport: Sendable, Hashable {
    public var style: PlaceholderStyle
    public var reason: String
    /// Set when real-name placeholders were asked for (`style = real-name`) and cannot be had: why.
    public var unavailable: String?

    public var wireName: String { style == .realName ? "real-name" : "suffix" }

    /// Real-name placeholders need the group (privilege), a kernel with pre-content events and
    /// a local filesystem that offers them; the first missing one is the reason for the suffix
    /// style. `choice` (`[placeholders] style`) may ask for one style: `suffix` is always
    /// possible; `real-name` where it is not gives a report whose `unavailable` says why.
    public static func decide(_ privilege: DaemonPrivilege, localRoot: String,
                              choice: Configuration.PlaceholderStyleChoice = .auto) -> PlaceholderStyleReport {
        if choice == .suffix {
            return PlaceholderStyleReport(style: .suffix, reason: "style = suffix in [placeholders]")
        }
        var missing: String?
        if let group = privilege.group {
            // A local folder a first pairing is about to create: it will be made in the nearest
            // folder that exists, on that folder's filesystem, so the mark is tried there.
            if let root = nearestExistingDirectory(localRoot) {
                missing = DaemonPrivilege.probe(group, localRoot: root)
                try? root.close()
            } else {
                missing = "the local folder cannot be opened to try a mark"
            }
        } else {
            missing = privilege.unavailableReason ?? "no pre-content fanotify group"
        }
        guard let missing else {
            return PlaceholderStyleReport(style: .realName, reason: choice == .realName
                ? "style = real-name in [placeholders]"
                : "kernel, local filesystem and privilege allow fanotify pre-content events")
        }
        var report = PlaceholderStyleReport(style: .suffix, reason: missing)
        if choice == .realName { report.unavailable = missing }
        return report
    }

    /// `path` opened as a directory, or the nearest of its parents that exists.
    static func nearestExistingDirectory(_ path: String) -> FileDescriptor? {
        var candidate = path
        while true {
            if let directory = try? FileDescriptor.open(SystemPath(candidate), [.directory]) { return directory }
            guard let slash = candidate.lastIndex(of: "/"), candidate != "/" else { return nil }
            candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
        }
    }
}
