import NimbusSystem
import NimbusVocabulary

/// Small files of the journal's owner beside the journal, under its lock: what must be
/// durable at once, without committing the records buffered meanwhile (a commit in the
/// middle of a batch would make records durable before the files they describe). Each is
/// replaced whole, atomically: a crash leaves the old note or the new one.
extension Journal {
    /// Where the note is, for messages.
    public func notePath(_ name: SystemPath) -> SystemPath { directory.path.appending(name) }

    /// The note's contents, or nil when there is none.
    public func readNote(_ name: SystemPath) throws -> [UInt8]? {
        guard let file = try directory.openIfPresent(name) else { return nil }
        return try file.closeAfter { try directory.readAll(file, name) }
    }

    /// Replaces the note by `contents` (written to a temporary file, fsynced, renamed over
    /// it, the directory fsynced), or removes it when nil; durable when it returns.
    public func writeNote(_ name: SystemPath, _ contents: [UInt8]?) throws {
        precondition(name != JournalDirectory.snapshotName && name != JournalDirectory.logName, "a note is not the journal")
        try makeFoldersDurable()
        guard let contents else {
            do {
                try directory.descriptor.removeFile(name)
            } catch let error as Errno where error == .noSuchFile {
                return
            } catch let error as Errno {
                throw error.at("remove", directory.path.appending(name))
            }
            return try directory.synchronize()
        }
        let file = try directory.writeTemporary(for: name) { file in try contents.withUnsafeBytes { try file.writeAll($0) } }
        try? file.close()
        try directory.installTemporary(for: name)
        try directory.synchronize()
    }
}
