import Glibc
import Testing
@testable import NimbusSystem

/// Directory descriptors kept for a batch (issue 15) must never send a file to a folder that
/// no longer has the path it was opened by.
@Suite struct DirectoryCacheTests {
    @Test func aFolderRenamedAndMadeAgainInTheBatchIsNotUsedUnderItsOldName() throws {
        try Pair.with { pair in
            try pair.scratch.directory.makeDirectory("src/d")
            try pair.scratch.write("src/d/a", randomBytes(100, seed: 1))
            try pair.scratch.write("src/d/b", randomBytes(200, seed: 2))
            try pair.destination.makeDirectory(try path("d"), mode: 0o755)
            try DirectoryCache.keepingDirectoriesOpen {
                _ = try pair.copy("d/a")
                try pair.destination.rename(try path("d"), to: try path("e"), replacing: false)
                try pair.destination.makeDirectory(try path("d"), mode: 0o755)
                _ = try pair.copy("d/b")
            }
            #expect(try pair.scratch.names(in: "dst/e") == [Array("a".utf8)])
            #expect(try pair.scratch.names(in: "dst/d") == [Array("b".utf8)])
        }
    }

    @Test func aFolderRemovedInTheBatchIsNotUsedAgain() throws {
        try Pair.with { pair in
            try pair.scratch.directory.makeDirectory("src/d")
            try pair.scratch.write("src/d/a", randomBytes(100, seed: 3))
            try pair.destination.makeDirectory(try path("d"), mode: 0o755)
            try DirectoryCache.keepingDirectoriesOpen {
                #expect(try pair.destination.metadata(of: try path("d/a")) == nil)
                try pair.destination.removeDirectory(try path("d"))
                try pair.destination.makeDirectory(try path("d"), mode: 0o700)
                _ = try pair.copy("d/a")
                #expect(try pair.destination.metadata(of: try path("d/a"))?.size == 100)
            }
            #expect(try pair.scratch.read("dst/d/a") == randomBytes(100, seed: 3))
        }
    }

    @Test func manyFoldersKeepAtMostTheCapacityAndOnlyForTheThreadOfTheScope() throws {
        try Pair.with { pair in
            for index in 0..<(DirectoryCache.capacity * 2) {
                try pair.destination.makeDirectory(try path("d\(index)"), mode: 0o755)
            }
            try DirectoryCache.keepingDirectoriesOpen {
                let scope = try #require(DirectoryCache.current)
                for index in 0..<(DirectoryCache.capacity * 2) {
                    #expect(try pair.destination.metadata(of: try path("d\(index)/missing")) == nil)
                    #expect(scope.keptCount <= DirectoryCache.capacity)
                }
                #expect(scope.keptCount > 0)
                let elsewhere = Thread { DirectoryCache.current == nil }
                #expect(elsewhere.run())
            }
            #expect(DirectoryCache.current == nil)
        }
    }
}

/// Runs a closure on a new thread and waits for its result.
private struct Thread {
    let body: @Sendable () -> Bool

    init(_ body: @escaping @Sendable () -> Bool) { self.body = body }

    func run() -> Bool {
        // The new thread writes `result` before it ends; `pthread_join` orders that before the read.
        final class Box: @unchecked Sendable {
            var body: @Sendable () -> Bool
            var result = false
            init(_ body: @escaping @Sendable () -> Bool) { self.body = body }
        }
        let box = Box(body)
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeUnretainedValue()
            box.result = box.body()
            return nil
        }, Unmanaged.passUnretained(box).toOpaque())
        guard started == 0 else { return false }
        pthread_join(thread, nil)
        return box.result
    }
}
