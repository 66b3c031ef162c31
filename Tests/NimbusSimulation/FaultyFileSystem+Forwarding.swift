import NimbusVocabulary

// Each operation: checked against the plan, then forwarded to the base.
extension FaultyFileSystem {
    public func metadata(of path: RelativePath) throws -> FileMetadata? {
        try perform(.metadata, [path]) { try base.metadata(of: path) }
    }

    public func scan(_ directory: RelativePath, descend: (RelativePath) throws -> Bool,
                     checkpoint: Checkpoint) throws -> ScanResult {
        try perform(.scan, [directory]) { try base.scan(directory, descend: descend, checkpoint: checkpoint) }
    }

    public func contentHash(of path: RelativePath, checkpoint: Checkpoint) throws -> ContentHash {
        try perform(.contentHash, [path]) { try base.contentHash(of: path, checkpoint: checkpoint) }
    }

    public func readFile(_ path: RelativePath, limit: Int) throws -> [UInt8] {
        try perform(.readFile, [path]) { try base.readFile(path, limit: limit) }
    }

    public func writeFile(_ path: RelativePath, contents: [UInt8], mode: UInt32) throws {
        try perform(.writeFile, [path]) { try base.writeFile(path, contents: contents, mode: mode) }
    }

    public func makeDirectory(_ path: RelativePath, mode: UInt32) throws {
        try perform(.makeDirectory, [path]) { try base.makeDirectory(path, mode: mode) }
    }

    public func makeSymlink(_ path: RelativePath, target: [UInt8]) throws {
        try perform(.makeSymlink, [path]) { try base.makeSymlink(path, target: target) }
    }

    public func rename(_ from: RelativePath, to: RelativePath, replacing: Bool) throws {
        try perform(.rename, [from, to]) { try base.rename(from, to: to, replacing: replacing) }
    }

    public func removeFile(_ path: RelativePath) throws {
        try perform(.removeFile, [path]) { try base.removeFile(path) }
    }

    public func removeDirectory(_ path: RelativePath) throws {
        try perform(.removeDirectory, [path]) { try base.removeDirectory(path) }
    }

    public func setAttributes(_ path: RelativePath, mode: UInt32?, mtime: Int64?) throws {
        try perform(.setAttributes, [path]) { try base.setAttributes(path, mode: mode, mtime: mtime) }
    }

    /// Consults both plans: this side's for `.prepareCopy`, the source side's for
    /// `.copySource` (so a fault or crash planned on the source side reaches the copy), then
    /// hands the two bases to the base's copy.
    public func prepareCopy(of source: RelativePath, from sourceSystem: FaultyFileSystem<Base>,
                            expected: FileMetadata, durable: Bool,
                            progress: (Int64) throws -> Void) throws -> PreparedCopy {
        try perform(.prepareCopy, [source]) {
            try sourceSystem.perform(.copySource, [source]) {
                try base.prepareCopy(of: source, from: sourceSystem.base, expected: expected, durable: durable,
                                     progress: progress)
            }
        }
    }

    public func prepareCopy(of source: RelativePath, from sourceSystem: FaultyFileSystem<Base>, expected: FileMetadata,
                            staged: RelativePath, durable: Bool, progress: (Int64) throws -> Void) throws -> PreparedCopy {
        try perform(.prepareCopy, [source, staged]) {
            try sourceSystem.perform(.copySource, [source]) {
                try base.prepareCopy(of: source, from: sourceSystem.base, expected: expected, staged: staged,
                                     durable: durable, progress: progress)
            }
        }
    }

    public func publishFolder(_ staged: RelativePath, at destination: RelativePath) throws -> Bool {
        try perform(.rename, [staged, destination]) { try base.publishFolder(staged, at: destination) }
    }

    public func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                        displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata {
        let installed = try perform(.install, [destination, copy.temporary]) {
            try base.install(copy, at: destination, replacing: replacing, displacedTo: displacedTo, durable: durable)
        }
        // An install made durable on its own (its folders fsynced) needs no flush after it:
        // the trace says so, for tests of what a flush must cover.
        if durable { trace?.trace.append(trace!.label, "durable", [destination]) }
        return installed
    }

    public func discard(_ copy: PreparedCopy) {
        _ = try? perform(.discard, [copy.temporary]) { base.discard(copy) }
    }

    public func synchronize() throws {
        try perform(.synchronize, []) { try base.synchronize() }
    }

    public func removeTemporaryFiles() throws -> Int {
        try perform(.removeTemporaryFiles, []) { try base.removeTemporaryFiles() }
    }

    public func removeTemporaryFiles(in directory: RelativePath, _ cleanup: TemporaryCleanup) throws -> Int {
        try perform(.removeTemporaryFiles, [directory]) { try base.removeTemporaryFiles(in: directory, cleanup) }
    }

    public func spaceInfo() throws -> (available: Int64, total: Int64) {
        try perform(.spaceInfo, []) { try base.spaceInfo() }
    }

    public func extendedAttribute(_ name: String, of path: RelativePath) throws -> [UInt8]? {
        try perform(.extendedAttribute, [path]) { try base.extendedAttribute(name, of: path) }
    }

    public func prepareFile(near path: RelativePath, contents: [UInt8], mode: UInt32, mtime: Int64,
                            attributes: [(String, [UInt8])], durable: Bool) throws -> PreparedCopy {
        try perform(.writeFile, [path]) {
            try base.prepareFile(near: path, contents: contents, mode: mode, mtime: mtime, attributes: attributes, durable: durable)
        }
    }

    public func setExtendedAttribute(_ name: String, of path: RelativePath, to value: [UInt8]) throws {
        try perform(.setExtendedAttribute, [path]) { try base.setExtendedAttribute(name, of: path, to: value) }
    }

    public func removeExtendedAttribute(_ name: String, of path: RelativePath) throws {
        try perform(.removeExtendedAttribute, [path]) { try base.removeExtendedAttribute(name, of: path) }
    }
}
