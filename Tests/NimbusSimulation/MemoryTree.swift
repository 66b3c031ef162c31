import NimbusVocabulary

/// The state behind a `MemoryFileSystem`'s lock: an inode table, the root, and space
/// accounting. The primitives here keep three things true for every caller: a directory's
/// mtime moves whenever its entries change, `usedBytes` is the sum of what the live inodes
/// store, and an inode number names at most one live inode.
struct MemoryTree {
    /// What ext4 reports as a directory's size (one block).
    static let directorySize: Int64 = 4096

    let device: UInt64
    let clock: @Sendable () -> Int64
    let reusesFreedInodes: Bool
    var capacity: Int64
    private(set) var usedBytes: Int64 = 0
    /// nil while the root itself has been removed: a deleted or unmounted sync folder.
    private(set) var root: UInt64?
    private var inodes: [UInt64: Inode] = [:]
    /// ext4 numbers its root 2; starting there keeps numbers in logs looking familiar.
    private var nextInode: UInt64 = 2
    private var freedInodes: [UInt64] = []
    private var changeSequence: UInt64 = 0
    /// The number in the last temporary file's name; names are never reused within a run.
    var temporaryCounter = 0
    /// Whether a directory without its owner's write and search bits refuses changes to its
    /// entries (EACCES), as it does to a daemon without CAP_DAC_OVERRIDE (`MemoryFileSystem`).
    var checksWritePermission = false

    init(clock: @escaping @Sendable () -> Int64, capacity: Int64, device: UInt64, reusesFreedInodes: Bool) {
        self.clock = clock
        self.capacity = capacity
        self.device = device
        self.reusesFreedInodes = reusesFreedInodes
        makeRoot()
    }

    // MARK: Reading

    func inode(_ number: UInt64) -> Inode {
        guard let inode = inodes[number] else { preconditionFailure("no inode \(number): the tree is corrupt") }
        return inode
    }

    /// The inode numbered `number`, or nil once it has been freed.
    func inodeIfLive(_ number: UInt64) -> Inode? { inodes[number] }

    func metadata(_ number: UInt64) -> FileMetadata {
        let inode = inode(number)
        var size = inode.storedBytes
        var target: [UInt8]?
        switch inode.content {
        case .directory: size = Self.directorySize
        case .file: break
        case .symlink(let linkTarget): target = linkTarget
        }
        return FileMetadata(kind: inode.kind, size: size, mtime: inode.mtime, mode: inode.mode,
                            inode: number, device: device, symlinkTarget: target)
    }

    /// The directory holding `path`'s last component. A symlink on the way is refused (ELOOP),
    /// never followed, as openat2 with RESOLVE_NO_SYMLINKS does.
    func parentDirectory(of path: RelativePath, _ operation: String) throws -> UInt64 {
        guard var current = root else { throw Errno.noSuchFile.at(operation, path) }
        for name in path.parent.components {
            guard let next = inode(current).children?[name] else { throw Errno.noSuchFile.at(operation, path) }
            switch inode(next).kind {
            case .directory: current = next
            case .symlink: throw Errno.tooManySymlinks.at(operation, path)
            case .file, .special: throw Errno.notDirectory.at(operation, path)
            }
        }
        return current
    }

    /// `parentDirectory`, for a call that changes its entries (`checksWritePermission`).
    func writableParent(of path: RelativePath, _ operation: String) throws -> UInt64 {
        let parent = try parentDirectory(of: path, operation)
        try checkWritable(parent, operation, path)
        return parent
    }

    /// EACCES for a directory without its owner's write and search bits, when they are checked.
    func checkWritable(_ directory: UInt64, _ operation: String, _ path: RelativePath) throws {
        guard checksWritePermission, inode(directory).mode & 0o300 != 0o300 else { return }
        throw Errno.permissionDenied.at(operation, path)
    }

    /// The inode at `path`, nil when its last component is missing; a missing or unusable
    /// parent throws, as lstat(2) does.
    func lookup(_ path: RelativePath, _ operation: String) throws -> UInt64? {
        if path.isRoot { return root }
        return inode(try parentDirectory(of: path, operation)).children?[path.name]
    }

    func existing(_ path: RelativePath, _ operation: String) throws -> UInt64 {
        guard let number = try lookup(path, operation) else { throw Errno.noSuchFile.at(operation, path) }
        return number
    }

    /// The bytes of a regular file the daemon may read: it runs unprivileged, so a file
    /// without the owner's read bit is refused (EACCES). Opening with O_NOFOLLOW makes a
    /// symlink ELOOP; a directory opens, and is then found not to be a file.
    func readableFile(_ path: RelativePath, _ operation: String) throws -> [UInt8] {
        let inode = inode(try existing(path, operation))
        switch inode.content {
        case .directory: throw CopyError.notAFile(path)
        case .symlink: throw Errno.tooManySymlinks.at(operation, path)
        case .file(let bytes):
            guard inode.mode & 0o400 != 0 else { throw Errno.permissionDenied.at(operation, path) }
            return bytes
        }
    }

    /// Every entry below the root, parents first, siblings in byte order. The order is fixed
    /// (a real readdir's is not) because a seeded run must replay identically.
    func allEntries() -> [(path: RelativePath, number: UInt64)] {
        var result: [(path: RelativePath, number: UInt64)] = []
        func visit(_ directory: UInt64, at path: RelativePath) {
            for (name, number) in sortedChildren(of: directory) {
                let childPath = Self.child(of: path, named: name)
                result.append((childPath, number))
                visit(number, at: childPath)
            }
        }
        if let root { visit(root, at: .root) }
        return result
    }

    /// A directory's entries in byte order; empty for anything else. Dictionary order changes
    /// from one process to the next, so nothing may iterate children unsorted.
    func sortedChildren(of number: UInt64) -> [(name: [UInt8], number: UInt64)] {
        (inode(number).children ?? [:])
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map { (name: $0.key, number: $0.value) }
    }

    /// `path/name` for a name read from the tree, which only ever holds valid names.
    static func child(of path: RelativePath, named name: [UInt8]) -> RelativePath {
        guard let child = try? path.appending(name: name) else {
            preconditionFailure("invalid name \(displayString(name)) in the tree")
        }
        return child
    }

    // MARK: Changing

    /// Throws ENOSPC unless `additional` more bytes fit.
    func checkSpace(for additional: Int64, _ operation: String, _ path: RelativePath) throws {
        if additional > 0 && usedBytes + additional > capacity { throw Errno.noSpace.at(operation, path) }
    }

    /// Numbers and stores `inode` without naming it; the caller links it (or makes it the root).
    mutating func allocate(_ inode: Inode) -> UInt64 {
        let number: UInt64
        if reusesFreedInodes, let freed = freedInodes.popLast() {
            number = freed
        } else {
            number = nextInode
            nextInode += 1
        }
        inodes[number] = inode
        usedBytes += inode.storedBytes
        stampChange(number)
        return number
    }

    /// Drops an inode no directory names any more, with everything below it.
    mutating func release(_ number: UInt64) {
        for child in sortedChildren(of: number) { release(child.number) }
        guard let inode = inodes.removeValue(forKey: number) else { return }
        usedBytes -= inode.storedBytes
        freedInodes.append(number)
        if number == root { root = nil }
    }

    mutating func makeRoot() {
        precondition(root == nil, "the root already exists")
        root = allocate(Inode(content: .directory([:]), mode: 0o755, mtime: clock()))
    }

    /// Every change to an inode goes through here, which moves its `changeStamp`.
    mutating func modify(_ number: UInt64, _ change: (inout Inode) -> Void) {
        guard inodes[number] != nil else { preconditionFailure("no inode \(number): the tree is corrupt") }
        change(&inodes[number]!)
        stampChange(number)
    }

    /// Moves the ctime alone, as a rename does to the entry it moves.
    mutating func stampChange(_ number: UInt64) {
        changeSequence += 1
        inodes[number]?.changeStamp = changeSequence
    }

    /// Names `number` as `name` in `directory` (or removes the name when `number` is nil).
    mutating func setEntry(_ name: [UInt8], in directory: UInt64, to number: UInt64?) {
        let now = clock()
        modify(directory) { directory in
            guard case .directory(var children) = directory.content else {
                preconditionFailure("linking into a non-directory")
            }
            // Drop the enum's reference first so the dictionary is edited in place, not copied.
            directory.content = .directory([:])
            children[name] = number
            directory.content = .directory(children)
            directory.mtime = now
        }
    }

    /// Creates `inode` at `path`, which must not exist yet (EEXIST); its bytes must fit (ENOSPC).
    @discardableResult
    mutating func create(_ inode: Inode, at path: RelativePath, _ operation: String) throws -> UInt64 {
        if path.isRoot { throw Errno.fileExists.at(operation, path) }
        let parent = try writableParent(of: path, operation)
        if self.inode(parent).children?[path.name] != nil { throw Errno.fileExists.at(operation, path) }
        try checkSpace(for: inode.storedBytes, operation, path)
        let number = allocate(inode)
        setEntry(path.name, in: parent, to: number)
        return number
    }

    /// Sets a regular file's content in place (same inode, new mtime), as write(2) does.
    mutating func setContent(of number: UInt64, to bytes: [UInt8], _ operation: String, _ path: RelativePath) throws {
        let old = inode(number).storedBytes
        try checkSpace(for: Int64(bytes.count) - old, operation, path)
        usedBytes += Int64(bytes.count) - old
        let now = clock()
        modify(number) {
            $0.content = .file(bytes)
            $0.mtime = now
        }
    }

    /// Appends to a regular file in place, as write(2) with O_APPEND does.
    mutating func appendContent(of number: UInt64, _ bytes: [UInt8], _ operation: String, _ path: RelativePath) throws {
        guard inode(number).kind == .file else { throw Errno.isDirectory.at(operation, path) }
        try checkSpace(for: Int64(bytes.count), operation, path)
        usedBytes += Int64(bytes.count)
        let now = clock()
        modify(number) { inode in
            guard case .file(var content) = inode.content else { preconditionFailure("appending to a non-file") }
            // Drop the enum's reference first so the array grows in place, not by copying.
            inode.content = .file([])
            content.append(contentsOf: bytes)
            inode.content = .file(content)
            inode.mtime = now
        }
    }
}
