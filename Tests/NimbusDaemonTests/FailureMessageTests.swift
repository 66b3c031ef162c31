import NimbusCore
import NimbusSimulation
@testable import NimbusDaemon
import NimbusVocabulary
import Testing

/// A failed action's message names the folder where the problem is. A copy is planned on the
/// side it writes to, but its source is opened and read on the other side: an upload of a
/// local file the daemon may not read said "cannot open secret.txt in the cloud folder", and
/// sent the user to check the cloud folder's permissions.
struct FailureMessageTests {
    typealias Engine = SyncEngine<MemoryFileSystem>
    let file = FileMetadata(kind: .file, size: 3, mtime: 1, mode: 0o600, inode: 5)
    let path = rp("dir/secret.txt")

    @Test(arguments: [Side.cloud, .local])
    func aSourceThatCannotBeReadIsNamedOnItsOwnSide(writingTo target: Side) {
        let copy = Action.copy(path, to: target, source: file, replacing: nil)
        let opened = Engine.explain(SystemError(.permissionDenied, "open", "dir/secret.txt"), action: copy)
        #expect(opened == "cannot open dir/secret.txt in the \(target.other) folder: permission denied. "
                + "Check the owner and permissions of dir/secret.txt; sync retries by itself.")
        let read = Engine.explain(SystemError(.ioError, "read", "dir/secret.txt"), action: copy)
        #expect(read.hasPrefix("cannot read dir/secret.txt in the \(target.other) folder: "), "\(read)")
    }

    @Test(arguments: [Side.cloud, .local])
    func aDestinationProblemIsNamedOnTheSideWrittenTo(writingTo target: Side) {
        let copy = Action.copy(path, to: target, source: file, replacing: nil)
        let full = Engine.explain(SystemError(.noSpace, "write", "dir/.nimbus-tmp-0123456789abcdef"), action: copy)
        #expect(full.hasPrefix("cannot write dir/secret.txt in the \(target) folder: the disk is full"), "\(full)")
        let renamed = Engine.explain(SystemError(.permissionDenied, "rename", "dir/secret.txt"), action: copy)
        #expect(renamed.hasPrefix("cannot rename dir/secret.txt in the \(target) folder: permission denied"), "\(renamed)")
        let removal = Action.remove(path, on: target, expected: file)
        let removed = Engine.explain(SystemError(.permissionDenied, "open", "dir/secret.txt"), action: removal)
        #expect(removed.hasPrefix("cannot open dir/secret.txt in the \(target) folder"), "\(removed)")
    }
}
