import NimbusSystem
import Testing
@testable import NimbusSimulation

/// A full disk: every write that does not fit throws ENOSPC and leaves nothing behind.
@Suite struct CapacityTests {
    @Test func spaceInfoCountsFileBytesAndLinkTargets() throws {
        let fixture = Fixture(capacity: 100)
        try fixture.populate(["dir/", "dir/file", "link -> dir/file"])
        #expect(try fixture.fs.spaceInfo() == (available: 84, total: 100))
        try fixture.fs.removeRecursively(path("dir"))
        #expect(try fixture.fs.spaceInfo().available == 92)
    }

    @Test func writesThatDoNotFitChangeNothing() throws {
        let fixture = Fixture(capacity: 10)
        try fixture.fs.write(path("file"), "12345678")
        let before = fixture.fs.snapshot()
        fixture.clock.advance(by: .nanoseconds(1))
        expectErrno(.noSpace) { try fixture.fs.append(path("file"), bytes("abc")) }
        expectErrno(.noSpace) { try fixture.fs.write(path("other"), "abc") }
        expectErrno(.noSpace) { try fixture.fs.makeSymlink(path("link"), target: bytes("abc")) }
        // An atomic save needs room for the new file while the old one still exists.
        expectErrno(.noSpace) { try fixture.fs.writeFile(path("file"), contents: bytes("1234"), mode: 0o644) }
        #expect(fixture.fs.snapshot() == before)
        // Rewriting in place in fewer bytes fits.
        try fixture.fs.write(path("file"), "1234")
        #expect(try fixture.fs.spaceInfo().available == 6)
    }

    @Test func aCopyThatRunsOutOfSpaceLeavesNoTemporaryFile() throws {
        let sides = Sides(cloudCapacity: 10, copyChunkSize: 4)
        try sides.local.write(path("big"), [UInt8](repeating: 7, count: 12))
        var reported: [Int64] = []
        expectErrno(.noSpace) { _ = try sides.prepare("big") { reported.append($0) } }
        #expect(reported == [4, 8], "it failed half-way, on the third chunk")
        #expect(sides.cloud.snapshot().isEmpty)
        #expect(try sides.cloud.spaceInfo().available == 10)
    }

    @Test func loweringTheCapacityFillsTheDisk() throws {
        let fixture = Fixture(capacity: 100)
        try fixture.fs.write(path("file"), "12345")
        fixture.fs.capacity = 3
        #expect(try fixture.fs.spaceInfo() == (available: 0, total: 3))
        expectErrno(.noSpace) { try fixture.fs.append(path("file"), bytes("6")) }
        // Deleting and shrinking still work on a full disk.
        try fixture.fs.write(path("file"), "1")
        #expect(try fixture.fs.spaceInfo().available == 2)
    }
}
