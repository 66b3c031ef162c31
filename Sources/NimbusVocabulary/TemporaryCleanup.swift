/// Which leftover temporary files a sweep may remove (DESIGN §3: a crash or a failed copy
/// leaves them; a running daemon sweeps them too, not only its start).
public struct TemporaryCleanup: Sendable, Hashable {
    /// Only a copy's temporary file, recognised by its exact name (`TemporaryName.isCopyTemporary`),
    /// rather than any `.nimbus-tmp-` name (an application's coordinated write is one too).
    public var copiesOnly: Bool
    /// Only files whose last change (the later of mtime and ctime) is before
    /// this; nil: whatever their age. A copy sets its temporary's mtime to the source's, so
    /// the ctime, moved by that very change, tells when the file was last written.
    public var changedBefore: WallInstant?
    /// Leave a file that some program has open (a write lease is refused, or where leases
    /// cannot be asked, `/proc/*/fd` shows a writer).
    public var skipsOpenFiles: Bool

    public init(copiesOnly: Bool, changedBefore: WallInstant?, skipsOpenFiles: Bool) {
        self.copiesOnly = copiesOnly
        self.changedBefore = changedBefore
        self.skipsOpenFiles = skipsOpenFiles
    }

    /// Every temporary file, whatever its age (at start: nothing of this daemon is in flight).
    public static let all = TemporaryCleanup(copiesOnly: false, changedBefore: nil, skipsOpenFiles: false)

    package func accepts(_ name: [UInt8]) -> Bool {
        copiesOnly ? TemporaryName.isCopyTemporary(name) : TemporaryName.isTemporary(name)
    }
}
