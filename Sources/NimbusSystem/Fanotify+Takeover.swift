import CNimbus
import Glibc
import NimbusVocabulary

// A group that outlives its daemon (DESIGN §5). systemd keeps the group's descriptor in the
// unit's file-descriptor store (FDSTORE=1) across a crash, so its marks stay and a program that
// opens a not-downloaded file meanwhile waits for the next daemon instead of reading zeros. The
// next daemon takes the group over; only the events the dead daemon had read but not answered
// need care, because their descriptors died with it.

extension FanotifyGroup {
    /// The group behind `descriptor`, inherited from systemd; nil when it is not a fanotify
    /// descriptor at all (the caller closes it then). The C function is `readlink`.
    public static func takeOver(_ descriptor: FileDescriptor) -> FanotifyGroup? {
        guard let target = try? Sys.readlink(SystemPath("/proc/self/fd/\(descriptor.rawValue)"), capacity: 63),
              String(decoding: target, as: UTF8.self) == "anon_inode:[fanotify]" else { return nil }
        // Inherited descriptors are not close-on-exec, and the server waits in poll.
        try? Sys.setCloseOnExec(descriptor.rawValue)
        try? Sys.setNonBlocking(descriptor.rawValue, true)
        return FanotifyGroup(descriptor: descriptor)
    }

    /// Answers, with `error`, every permission event a previous owner of the group read and
    /// never answered: each waits in the kernel under the descriptor number it was given,
    /// which died with that process, so every number below `limit` is answered; the kernel
    /// refuses the numbers it does not wait on (`ENOENT`). Must run before this process reads
    /// any event of its own (whose numbers would be answered too). The reader of a fill cut
    /// short gets an error instead of the part filled so far and then zeros. Returns how many
    /// waited. The C function is `write`.
    public func denyAbandonedEvents(with error: Errno = .ioError, below limit: Int32) -> Int {
        var denied = 0
        for number in 0..<limit {
            var answer = fanotify_response(fd: number, response: FanotifyResponse.deny(error).kernelValue)
            // ENOENT: nothing waits under that number.
            let written = try? withUnsafeBytes(of: &answer) { try Sys.write(descriptor.rawValue, $0) }
            if written == MemoryLayout<fanotify_response>.size { denied += 1 }
        }
        return denied
    }
}
