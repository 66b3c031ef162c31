import NimbusSystem
import NimbusVocabulary
import Testing
@testable import NimbusSimulation
import NimbusTestSupport

/// A memory filesystem behind a fault injector.
private func faulty(random: SeededRandom = SeededRandom(seed: 0), probabilities: [FileSystemOperation: Double] = [:],
                    randomErrors: [Errno] = [.ioError]) -> FaultyFileSystem<MemoryFileSystem> {
    FaultyFileSystem(MemoryFileSystem(time: { 0 }), random: random, probabilities: probabilities,
                     randomErrors: randomErrors)
}

@Suite struct FaultyFileSystemTests {
    @Test func aRuleStrikesExactlyAsManyTimesAsPlannedAndTheOperationDoesNotHappen() throws {
        let fs = faulty()
        try fs.base.write(path("a"), "x")
        fs.fail(.rename, path: path("a"), with: .noSpace, times: 2)
        for _ in 0..<2 {
            expectErrno(.noSpace) { try fs.rename(path("a"), to: path("b"), replacing: false) }
            #expect(try fs.base.metadata(of: path("a")) != nil)
        }
        try fs.rename(path("a"), to: path("b"), replacing: false)
        #expect(fs.calls(.rename) == 3)
        #expect(fs.calls(.metadata) == 0, "calls on the base directly are not counted")
        #expect(fs.injectedFaults == [Errno.noSpace.at("rename", "a"), Errno.noSpace.at("rename", "a")])
    }

    @Test func aRuleMatchesItsPathAndWhatIsBelowItOnly() throws {
        let fs = faulty()
        try fs.base.write(path("dir/inner/file"), "x")
        try fs.base.write(path("dirt"), "x")
        fs.fail(.metadata, path: path("dir/inner"), with: .ioError, times: 10)
        #expect(try fs.metadata(of: path("dir")) != nil)
        #expect(try fs.metadata(of: path("dirt")) != nil)
        expectErrno(.ioError) { _ = try fs.metadata(of: path("dir/inner")) }
        expectErrno(.ioError) { _ = try fs.metadata(of: path("dir/inner/file")) }
        // A rename is aimed at by its destination as well as its source.
        fs.fail(.rename, path: path("target"), with: .permissionDenied)
        expectErrno(.permissionDenied) { try fs.rename(path("dirt"), to: path("target"), replacing: false) }
        // A rule for another operation does not strike.
        try fs.writeFile(path("dir/inner/new"), contents: [], mode: 0o644)
    }

    @Test func aFaultAfterTheOperationReportsAnErrorForSomethingDone() throws {
        let fs = faulty()
        fs.fail(.makeDirectory, with: .ioError, timing: .afterOperation)
        expectErrno(.ioError) { try fs.makeDirectory(path("dir"), mode: 0o755) }
        #expect(try fs.base.metadata(of: path("dir"))?.kind == .directory)
    }

    @Test func randomFaultsReplayFromTheSeed() throws {
        func outcomes(seed: UInt64) -> [Bool] {
            let fs = faulty(random: SeededRandom(seed: seed), probabilities: [.metadata: 0.3])
            return (0..<200).map { _ in (try? fs.metadata(of: .root)) != nil }
        }
        let first = outcomes(seed: 7)
        #expect(first == outcomes(seed: 7))
        #expect(first != outcomes(seed: 8))
        let failures = first.filter { !$0 }.count
        #expect((30...90).contains(failures), "about 30% of 200 calls fail, got \(failures)")
    }

    @Test func randomFaultsHitOnlyTheOperationsGivenAProbability() throws {
        let fs = faulty(probabilities: [.writeFile: 1], randomErrors: [.noSpace, .permissionDenied])
        for index in 0..<20 {
            #expect(throws: SystemError.self) { try fs.writeFile(path("f\(index)"), contents: [], mode: 0o644) }
            #expect(try fs.metadata(of: .root) != nil)
        }
        #expect(Set(fs.injectedFaults.map(\.errno)) == [.noSpace, .permissionDenied])
        fs.probabilities = [:]
        try fs.writeFile(path("settled"), contents: [], mode: 0o644)
    }

    @Test func afterACrashNothingHappensAnyMore() throws {
        let fs = faulty()
        try fs.makeDirectory(path("before"), mode: 0o755)
        fs.crash()
        #expect(fs.isCrashed)
        #expect(throws: SimulatedCrash(operation: .makeDirectory)) { try fs.makeDirectory(path("after"), mode: 0o755) }
        #expect(throws: SimulatedCrash(operation: .metadata)) { _ = try fs.metadata(of: path("before")) }
        #expect(fs.base.snapshot().keys.sorted() == [path("before")])
    }

    @Test func aScheduledCrashLetsTheGivenNumberOfOperationsThrough() throws {
        let fs = faulty()
        fs.crash(afterOperations: 2)
        try fs.makeDirectory(path("one"), mode: 0o755)
        _ = try fs.metadata(of: path("one"))
        #expect(throws: SimulatedCrash.self) { try fs.makeDirectory(path("two"), mode: 0o755) }
        #expect(fs.base.snapshot().keys.sorted() == [path("one")])
        #expect(fs.calls(.makeDirectory) == 2)
    }

    @Test func aPreparedCopySurvivesACrashAsALeftoverTemporaryFile() throws {
        let local = faulty(), cloud = faulty()
        try local.base.write(path("file"), "content")
        let expected = try #require(try local.metadata(of: path("file")))
        let copy = try cloud.prepareCopy(of: path("file"), from: local, expected: expected, durable: true) { _ in }
        cloud.crash()
        #expect(throws: SimulatedCrash.self) {
            _ = try cloud.install(copy, at: path("file"), replacing: nil, displacedTo: nil, durable: true)
        }
        cloud.discard(copy)
        #expect(temporaryFiles(cloud.base.snapshot()) == [copy.temporary])
        // The restarted engine gets a new decorator over the same disk and sweeps up.
        let restarted = FaultyFileSystem(cloud.base)
        #expect(try restarted.removeTemporaryFiles() == 1)
        #expect(cloud.base.snapshot().isEmpty)
    }

    @Test func aCrashInTheMiddleOfACopyLeavesItsTemporaryFile() throws {
        let local = faulty()
        let cloud = FaultyFileSystem(MemoryFileSystem(time: { 0 }, copyChunkSize: 2))
        try local.base.write(path("file"), "content")
        let expected = try #require(try local.metadata(of: path("file")))
        cloud.base.duringCopy = { _, _ in cloud.crash() }
        #expect(throws: SimulatedCrash(operation: .prepareCopy)) {
            _ = try cloud.prepareCopy(of: path("file"), from: local, expected: expected, durable: true) { _ in }
        }
        #expect(temporaryFiles(cloud.base.snapshot()).count == 1)
    }

    @Test func aCopyIsCountedOnBothSidesAndFaultsOnEitherSideFailIt() throws {
        let local = faulty(), cloud = faulty()
        try local.base.write(path("file"), "content")
        let expected = try #require(try local.metadata(of: path("file")))
        func copy() throws -> PreparedCopy {
            try cloud.prepareCopy(of: path("file"), from: local, expected: expected, durable: true) { _ in }
        }
        local.fail(.copySource, path: path("file"), with: .ioError)
        expectErrno(.ioError) { _ = try copy() }
        cloud.fail(.prepareCopy, with: .noSpace)
        expectErrno(.noSpace) { _ = try copy() }
        #expect(cloud.base.snapshot().isEmpty)

        let prepared = try copy()
        #expect(cloud.calls(.prepareCopy) == 3 && local.calls(.copySource) == 2 && local.calls(.prepareCopy) == 0)
        _ = try cloud.install(prepared, at: path("file"), replacing: nil, displacedTo: nil, durable: true)
        #expect(cloud.base.snapshot()[path("file")]?.content == .file(bytes("content")))
    }

    @Test func aFaultOnDiscardLeavesTheTemporaryFile() throws {
        let local = faulty(), cloud = faulty()
        try local.base.write(path("file"), "content")
        let expected = try #require(try local.metadata(of: path("file")))
        let copy = try cloud.prepareCopy(of: path("file"), from: local, expected: expected, durable: true) { _ in }
        cloud.fail(.discard, with: .ioError)
        cloud.discard(copy)
        #expect(temporaryFiles(cloud.base.snapshot()) == [copy.temporary])
        cloud.discard(copy)
        #expect(temporaryFiles(cloud.base.snapshot()).isEmpty)
        #expect(cloud.calls(.discard) == 2)
    }
}
