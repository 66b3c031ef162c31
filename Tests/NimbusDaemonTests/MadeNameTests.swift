import Testing
import NimbusCore
import NimbusVocabulary
import NimbusTestSupport
@testable import NimbusSystem
@testable import NimbusDaemon

/// Every name Nimbus makes from a user's name and its device's name fits in NAME_MAX bytes,
/// is valid UTF-8 when both were, and differs from the others made for the same file: over
/// seeded random names up to 255 bytes (ASCII, two- to four-byte characters, combining marks,
/// long extensions, bytes that are not UTF-8) and device names the config takes (64
/// characters, which may be 256 bytes and more). A name too long is refused by the
/// filesystem, and whatever needed it (a conflict copy, a version) was planned again for ever.
@Suite struct MadeNameTests {
    /// NIMBUS_SEED=N replays one run; NIMBUS_RANDOM_RUNS sets how many run.
    @Test func everyMadeNameFitsStaysUTF8AndIsUnique() throws {
        let seeds = SeededRandom.scenarioSeeds("made names", runs: 2_000, runsVariable: "NIMBUS_RANDOM_RUNS")
        var failures: [String] = []
        for seed in seeds {
            let problems = Self.check(seed: seed)
            if !problems.isEmpty { failures.append("seed \(seed): " + problems.joined(separator: "; ")) }
            if failures.count >= 3 { break }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// The rule each made name breaks, if any, for one seed's file and device names.
    static func check(seed: UInt64) -> [String] {
        var random = SeededRandom(seed: seed)
        let name = randomName(&random)
        let device = randomDevice(&random)
        let path = try! RelativePath(validating: Array("dir/".utf8) + name)
        let isText = String(validating: name, as: UTF8.self) != nil
        let when = WallInstant.origin + .seconds(Int64(random.next(below: 4_000_000_000)))
        var problems: [String] = []
        func judge(_ made: [UInt8], _ what: String, text: Bool) {
            if made.count > FileName.maxBytes { problems.append("\(what) has \(made.count) bytes") }
            if text && String(validating: made, as: UTF8.self) == nil { problems.append("\(what) is not UTF-8: \(made)") }
            if made.isEmpty || made.contains(UInt8(ascii: "/")) || made.contains(0) { problems.append("\(what) is no name: \(made)") }
        }
        guard ConfigSetting.validDeviceName(device) == device else { return ["the device name \(device.debugDescription) is refused"] }

        // Conflict copies, as a pass makes them (each taken in turn) and for another device's change.
        for namer in [ConflictNamer(device: device, wallTime: when), ConflictNamer(device: "another device", wallTime: when)] {
            var taken: Set<RelativePath> = [path]
            for attempt in 1...3 {
                let copy = namer.name(for: path) { taken.contains($0) }
                judge(copy.name, "conflict copy \(attempt) of \(namer.device)", text: isText)
                if copy.parent != path.parent { problems.append("conflict copy \(copy) left its folder") }
                if taken.contains(copy) { problems.append("conflict copy \(attempt) is a name already taken: \(copy)") }
                taken.insert(copy)
            }
        }
        // Kept versions, and the numbered names a taken one gets when moved into the store.
        let store = VersionStore(device: device)
        let versions = (1...3).map { store.location(for: path, at: when, attempt: $0).name }
        for (number, version) in versions.enumerated() {
            judge(version, "version name \(number + 1)", text: true)
            judge(Installer.numbered(SystemPath(bytes: version), 2).bytes, "numbered version name \(number + 1)", text: true)
        }
        if Set(versions).count != versions.count { problems.append("version names repeat: \(versions)") }
        // The user's name numbered, the private name of a file being removed, its placeholder's name.
        let numbered = (2...4).map { Installer.numbered(SystemPath(bytes: name), $0).bytes }
        numbered.forEach { judge($0, "numbered name", text: isText) }
        if Set(numbered).count != numbered.count || numbered.contains(name) { problems.append("numbered names repeat: \(numbered)") }
        judge(GuardedRemoval.privateName(of: name, tag: "remove-"), "the private name of a removal", text: isText)
        if let file = Placeholder.file(for: path) { judge(file.name, "placeholder name", text: isText) }
        judge(RootMarkers.temporary(for: device).name, "the device's folder of temporaries", text: true)
        return problems
    }

    /// Each device sweeps its own folder of `.nimbus/tmp`: two long names that begin alike
    /// must not share one, nor may a short name change its folder (temporaries already there).
    @Test func longDeviceNamesThatBeginAlikeHaveFoldersOfTheirOwn() {
        let start = String(repeating: "😀", count: 63)
        let folders = ["a", "b"].map { RootMarkers.temporary(for: start + $0).name }
        #expect(folders[0] != folders[1])
        #expect(folders.allSatisfy { $0.count <= FileName.maxBytes && String(validating: $0, as: UTF8.self) != nil })
        #expect(RootMarkers.temporary(for: "laptop") == rp(".nimbus/tmp/laptop"))
    }

    /// A name of 1 to 255 bytes, often near the limit, often with an extension (sometimes a
    /// long one), of characters of every UTF-8 length, with now and then a byte that is not UTF-8.
    static func randomName(_ random: inout SeededRandom) -> [UInt8] {
        let length = random.chance(0.6) ? 240 + random.next(below: 16) : 1 + random.next(below: 255)
        let extensionLength = random.chance(0.3) ? 0 : random.chance(0.2) ? random.next(below: length) : 1 + random.next(below: 8)
        let stem = randomBytes(&random, upTo: max(1, length - extensionLength))
        let ext = extensionLength > 1 ? Array(".".utf8) + randomBytes(&random, upTo: extensionLength - 1) : []
        let name = stem + ext
        return name.isEmpty || name == Array(".".utf8) || name == Array("..".utf8) ? Array("x".utf8) : name
    }

    /// Characters up to `limit` bytes, and now and then a byte that is not UTF-8.
    static func randomBytes(_ random: inout SeededRandom, upTo limit: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            let piece = random.chance(0.03) ? [UInt8(0x80 + random.next(below: 0x80))] : Array(randomCharacter(&random).utf8)
            guard bytes.count + piece.count <= limit else { return bytes }
            bytes += piece
        }
    }

    /// A device name the config takes: 1 to 64 characters, most often 64 long ones.
    static func randomDevice(_ random: inout SeededRandom) -> String {
        let count = random.chance(0.5) ? 64 : 1 + random.next(below: 64)
        var device = ""
        while device.count < count {
            // A base character after a combining mark could merge with it: keep the count right.
            let next = device + randomCharacter(&random)
            if next.count > device.count { device = next }
        }
        return device.trimmedOfBlanks.isEmpty ? "x" : device.trimmedOfBlanks
    }

    /// One character (as text: a scalar's marks may still join it to its neighbour): ASCII (never '/'), two, three or four bytes, or a letter with combining marks.
    static func randomCharacter(_ random: inout SeededRandom) -> String {
        let ranges: [ClosedRange<UInt32>] = [0x21...0x2E, 0x30...0x7E, 0xA1...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFD, 0x1_0000...0x1_FFFF]
        let range = ranges[random.next(below: ranges.count)]
        let scalar = Unicode.Scalar(range.lowerBound + UInt32(random.next(below: Int(range.upperBound - range.lowerBound) + 1)))!
        guard random.chance(0.1) else { return String(scalar) }
        return (0..<1 + random.next(below: 6)).reduce(String(scalar)) { text, _ in text + String(Unicode.Scalar(0x300 + UInt32(random.next(below: 0x70)))!) }
    }
}
