import Testing
import NimbusSystem
@testable import NimbusDaemon

/// Going idle after a burst gives back the room the burst's tables grew into (issue 15).
@Suite struct SpareCapacityTests {
    /// Every copy of a batch is in progress at once, so the table of in-progress paths grows
    /// to the batch's size and, emptied, kept it: half a MiB after an initial sync of 10 000
    /// files.
    @Test func theInProgressTableOfABatchShrinksWhenTheEngineGivesMemoryBack() throws {
        let pair = Pair { $0.batchThreshold = 2 }
        for n in 0..<500 { try pair.local.write(rp("f\(n)"), Array("\(n)".utf8)) }
        pair.engine.start()
        #expect(pair.content(pair.cloud, "f499") == "499")
        let grown = pair.engine.tables.transientCapacity
        #expect(grown > 64, "the batch should have filled the in-progress table (capacity \(grown))")
        pair.engine.returnFreeMemory()
        let tables = pair.engine.tables
        #expect(tables.transientPaths.isEmpty && tables.transientCapacity == 0,
                "\(tables.transientPaths.count) entries, room for \(tables.transientCapacity)")
        #expect(pair.engine.entry(rp("f7"))?.state == .downloaded)
    }

    @Test func aMostlyEmptyDictionaryKeepsItsEntriesInATableSizedForThem() {
        var table: [Int: String] = [:]
        for n in 0..<10_000 { table[n] = "\(n)" }
        for n in 3..<10_000 { table[n] = nil }
        #expect(table.capacity >= 10_000)
        table.releaseSpareCapacity()
        #expect(table == [0: "0", 1: "1", 2: "2"] && table.capacity < 64, "room for \(table.capacity)")
    }

    @Test func aDictionaryUsingItsRoomIsLeftAsItIs() {
        var table: [Int: Int] = [:]
        for n in 0..<1_000 { table[n] = n }
        for n in 0..<500 { table[n] = nil }
        let capacity = table.capacity
        table.releaseSpareCapacity()
        #expect(table.capacity == capacity && table.count == 500 && table[999] == 999)
    }
}
