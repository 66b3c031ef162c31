import NimbusSystem
import NimbusVocabulary
import Testing
@testable import NimbusSimulation

/// A path from a literal known to be valid.
func path(_ text: String) -> RelativePath {
    guard let path = try? RelativePath(validating: text) else { preconditionFailure("invalid test path \(text)") }
    return path
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A filesystem on a manual clock, for tests that look at mtimes.
struct Fixture {
    let clock = ManualClock()
    let fs: MemoryFileSystem

    init(capacity: Int64 = 1 << 40, temporaryDirectory: RelativePath? = nil, copyChunkSize: Int = 64 * 1024,
         reusesFreedInodes: Bool = true) {
        fs = MemoryFileSystem(time: clock.timeSource, capacity: capacity, temporaryDirectory: temporaryDirectory,
                              copyChunkSize: copyChunkSize, reusesFreedInodes: reusesFreedInodes)
    }

    /// Creates each path: a trailing "/" makes a directory, "name -> target" a symlink, and
    /// anything else a file whose content is its own path.
    func populate(_ entries: [String]) throws {
        for entry in entries {
            if entry.hasSuffix("/") {
                try fs.makeDirectories(path(String(entry.dropLast())))
            } else if let arrow = entry.firstRange(of: " -> ") {
                try fs.makeSymlink(path(String(entry[..<arrow.lowerBound])), target: bytes(String(entry[arrow.upperBound...])))
            } else {
                try fs.write(path(entry), entry)
            }
        }
    }
}

/// Two sides on one clock, as the engine sees them.
struct Sides {
    let clock = ManualClock()
    let local: MemoryFileSystem
    let cloud: MemoryFileSystem

    init(cloudCapacity: Int64 = 1 << 40, temporaryDirectory: RelativePath? = nil, copyChunkSize: Int = 4) {
        local = MemoryFileSystem(time: clock.timeSource, device: 1)
        cloud = MemoryFileSystem(time: clock.timeSource, capacity: cloudCapacity, temporaryDirectory: temporaryDirectory,
                                 copyChunkSize: copyChunkSize, device: 2)
    }

    /// Prepares a copy of `name` from local to cloud, expecting what local has now.
    func prepare(_ name: String, progress: (Int64) -> Void = { _ in }) throws -> PreparedCopy {
        let expected = try #require(try local.metadata(of: path(name)))
        return try cloud.prepareCopy(of: path(name), from: local, expected: expected, durable: true, progress: progress)
    }
}

/// Runs `body` and expects it to throw a `SystemError` carrying `errno`.
func expectErrno(_ errno: Errno, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    let error = #expect(throws: SystemError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.errno == errno, "expected \(errno), got \(String(describing: error))", sourceLocation: sourceLocation)
}

/// Runs `body` and expects it to throw exactly `expected`.
func expectCopyError(_ expected: CopyError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    let error = #expect(throws: CopyError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error == expected, sourceLocation: sourceLocation)
}

/// The names of the temporary files anywhere in a snapshot.
func temporaryFiles(_ snapshot: [RelativePath: MemoryFileSystem.Node]) -> [RelativePath] {
    snapshot.keys.filter { TemporaryName.isTemporary($0.name) }.sorted()
}
