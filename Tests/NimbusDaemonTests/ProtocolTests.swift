import Foundation
import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusTestSupport
import NimbusVocabulary
import Testing
@testable import NimbusDaemon

/// The protocol vocabulary without a daemon: framing, Codable round trips, paths, times.
@Suite struct ProtocolTests {
    // MARK: - Framing

    func lines(_ items: [LineFramer.Item]) -> [String] {
        items.compactMap { if case .line(let l) = $0 { String(decoding: l, as: UTF8.self) } else { nil } }
    }

    @Test func splitsLinesAndSkipsEmptyOnes() {
        var framer = LineFramer()
        #expect(lines(framer.push(Array("a\nb\r\n\n\r\nc".utf8))) == ["a", "b"])
        #expect(framer.bufferedCount == 1)
        #expect(lines(framer.push(Array("\n".utf8))) == ["c"])
        #expect(framer.bufferedCount == 0)
    }

    @Test func joinsLinesSplitAcrossReads() {
        var framer = LineFramer()
        var result: [String] = []
        for byte in Array("{\"id\":1}\n{\"id\":2}\n".utf8) { result += lines(framer.push([byte])) }
        #expect(result == ["{\"id\":1}", "{\"id\":2}"])
    }

    @Test func acceptsALineOfExactlyTheLimit() {
        var framer = LineFramer(limit: 16)
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: 16)
        #expect(framer.push(line + [UInt8(ascii: "\r"), UInt8(ascii: "\n")]) == [.line(line)])
        #expect(framer.push(line + [UInt8(ascii: "\n")]) == [.line(line)])
    }

    @Test func reportsAnOversizeLineOnceAndRecovers() {
        var framer = LineFramer(limit: 16)
        var items: [LineFramer.Item] = []
        // 100 bytes in chunks of 7, then the end of the line and a good one.
        let long = [UInt8](repeating: UInt8(ascii: "y"), count: 100)
        for start in stride(from: 0, to: long.count, by: 7) {
            items += framer.push(long[start..<min(start + 7, long.count)])
            #expect(framer.bufferedCount <= 17, "the framer must not hold more than the limit")
        }
        #expect(items.count == 1)
        guard case .tooLong(let prefix) = items.first else { Issue.record("no tooLong item"); return }
        #expect(prefix.count <= 256 && prefix.allSatisfy { $0 == UInt8(ascii: "y") })
        #expect(framer.isDiscarding)
        #expect(framer.push(Array("yyy\nok\n".utf8)) == [.line(Array("ok".utf8))])
    }

    @Test func theDefaultLimitIsOneMebibyte() {
        var framer = LineFramer()
        let exact = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
        #expect(framer.push(exact + [10]) == [.line(exact)])
        let items = framer.push(exact + [UInt8(ascii: "a"), 10])
        #expect(items.count == 1)
        if case .line = items.first { Issue.record("a line of 1 MiB + 1 byte was accepted") }
    }

    // MARK: - Messages

    func roundTrip<Message: Codable & Equatable>(_ value: Message) throws -> Message {
        let data = try JSONRPC.makeEncoder().encode(value)
        return try JSONDecoder().decode(Message.self, from: data)
    }

    @Test func resultsRoundTrip() throws {
        let odd = WirePath(bytes: [0x61, 0xFF, 0x2F, 0x62])
        let entry = Entry(path: odd, kind: "file", size: 12, mtimeNs: 1_738_314_902_123_456_789,
                          state: .uploading(progress: 0.5), conflictCopy: nil, residency: "pinned")
        #expect(try roundTrip(entry) == entry)
        #expect(try roundTrip(entry).wirePath == odd)
        #expect(try roundTrip(entry).fileState == .uploading(progress: 0.5))
        #expect(try roundTrip(ListResult(entries: [entry], nextCursor: "1.1")) == ListResult(entries: [entry], nextCursor: "1.1"))
        let status = StatusResult(phase: "halted", reason: "the cloud folder is missing", paused: false, tracked: 3, heldDeletes: 0,
                                  conflicts: 1, bytesCopied: 10, filesCopied: 2, lastError: nil, instance: "default",
                                  localRoot: "/l", cloudRoot: "/c", deviceName: "laptop", daemonVersion: "0.1.0",
                                  startedAtNs: 0, clients: 1)
        #expect(try roundTrip(status) == status)
        #expect(try roundTrip(RestoreParams(path: WirePath("a"), version: "v", to: odd)) == RestoreParams(path: WirePath("a"), version: "v", to: odd))
        #expect(try roundTrip(AcquireParams(path: WirePath("a"), mode: "shared", timeoutSeconds: 1.5)).timeoutSeconds == 1.5)
        #expect(try roundTrip(LeaseInfo(lease: 7, path: odd, mode: "exclusive", state: "waiting", owner: nil, mine: false)).lease == 7)
    }

    @Test func requestsHaveTheJSONRPCEnvelope() throws {
        let line = try JSONRPC.line(Request(id: .number(4), method: .stat, params: PathParams(WirePath("notes.txt"))))
        #expect(line.last == UInt8(ascii: "\n"))
        let text = String(decoding: line.dropLast(), as: UTF8.self)
        #expect(text == #"{"id":4,"jsonrpc":"2.0","method":"stat","params":{"path":"notes.txt"}}"#)
        let head = try JSONDecoder().decode(MessageHead.self, from: Data(line))
        #expect(head.kind == .request && head.id == .number(4) && head.method == "stat")
    }

    @Test func errorResponsesAlwaysCarryAnId() throws {
        let error = RPCError(.parseError, "the line is not valid JSON", reason: "r", suggestion: "s")
        let text = String(decoding: try JSONRPC.makeEncoder().encode(ErrorResponse(id: nil, error: error)), as: UTF8.self)
        #expect(text.contains("\"id\":null"))
        do {
            _ = try JSONRPC.decodeResult(StatusResult.self, from: Array(text.utf8))
            Issue.record("an error response decoded as a result")
        } catch let decoded as RPCError {
            #expect(decoded == error && decoded.name == .parseError && decoded.code == -32700)
        }
    }

    @Test func idsAreIntegersOrStrings() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(MessageHead.self, from: Data(#"{"id":"a-1","method":"x"}"#.utf8)).id == .string("a-1"))
        #expect(try decoder.decode(MessageHead.self, from: Data(#"{"method":"event"}"#.utf8)).kind == .notification)
        #expect(throws: (any Error).self) { try decoder.decode(MessageHead.self, from: Data(#"{"id":1.5,"method":"x"}"#.utf8)) }
    }

    @Test func everyErrorNameHasItsOwnCodeExceptInvalidPath() {
        let codes = ErrorName.allCases.filter { $0 != .invalidPath }.map(\.code)
        #expect(Set(codes).count == codes.count)
        #expect(ErrorName.invalidPath.code == ErrorName.invalidParams.code)
        #expect(ErrorName.parseError.code == -32700 && ErrorName.methodNotFound.code == -32601)
    }

    /// The names the daemon accepts are exactly the members of each method's parameter type.
    @Test func everyMethodAcceptsExactlyTheMembersOfItsParameters() throws {
        let path = WirePath(bytes: Array("a".utf8))
        func members(_ value: some Encodable) throws -> [String] {
            let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any]
            return (object ?? [:]).keys.sorted()
        }
        var full = ListParams(path: path, recursive: true, state: "conflict", limit: 5, cursor: "c")
        full.pathBytes = "YQ=="
        var pathOnly = PathParams(path)
        pathOnly.pathBytes = "YQ=="
        var download = DownloadParams(path, wait: true)
        download.pathBytes = "YQ=="
        var resolve = ResolveParams(path: path, keep: "both")
        resolve.pathBytes = "YQ=="
        var restore = RestoreParams(path: path, version: "v", to: path, atNs: 1, dryRun: true)
        (restore.pathBytes, restore.toBytes) = ("YQ==", "YQ==")
        var versions = VersionsParams(path: path, all: true)
        versions.pathBytes = "YQ=="
        var acquire = AcquireParams(path: path, mode: "shared", timeoutSeconds: 1)
        acquire.pathBytes = "YQ=="
        for method in ControlMethod.allCases {
            let expected: [String]
            switch method {
            case .hello: expected = try members(HelloParams(versions: [1], client: "c"))
            case .list: expected = try members(full)
            case .stat, .evict, .pin, .unpin: expected = try members(pathOnly)
            case .versions: expected = try members(versions)
            case .download: expected = try members(download)
            case .resolve: expected = try members(resolve)
            case .restore: expected = try members(restore)
            case .watch: expected = try members(WatchParams(progress: true))
            case .acquire: expected = try members(acquire)
            case .release: expected = try members(ReleaseParams(lease: 1))
            case .status, .conflicts, .pause, .resume, .rescan, .confirmDeletes, .revertDeletes, .locks, .reload, .prune: expected = []
            }
            #expect(method.parameterNames.sorted() == expected, "\(method)")
        }
    }

    @Test func fileStatesKeepTheirWireNames() {
        for name in FileState.allNames {
            #expect(FileState(wireName: name)?.name == name)
        }
        #expect(FileState(wireName: "error", message: "disk full") == .error("disk full"))
        #expect(FileState(wireName: "synced") == nil)
    }

    @Test func listPagesAreWrittenExactlyAsJSONEncoderWould() throws {
        let awkward = ["plain.txt", "quote\"back\\slash/dir", "tab\tnew\nline\r\u{8}\u{c}", "\u{1}\u{1f}\u{7f}",
                       "café ☁️ \u{2028}", String(repeating: "long/", count: 50)]
        var entries: [Entry] = []
        for (index, text) in awkward.enumerated() {
            let odd = WirePath(bytes: Array(text.utf8) + [0xFF])
            entries.append(Entry(path: WirePath(text), kind: "file", size: Int64(index) * 1_000_003, mtimeNs: -Int64(index) * 999,
                                 state: .downloaded, conflictCopy: nil, residency: "auto"))
            entries.append(Entry(path: odd, kind: "directory", size: 0, mtimeNs: 1_738_314_902_123_456_789,
                                 state: .conflict, conflictCopy: odd, residency: "pinned"))
            entries.append(Entry(path: WirePath(text), kind: "symlink", size: 0, mtimeNs: 0,
                                 state: .error(text), conflictCopy: nil, residency: "evicted"))
            entries.append(Entry(path: WirePath(text), kind: "file", size: 1, mtimeNs: 1, state: .uploading(progress: 0.25),
                                 conflictCopy: nil, residency: "auto"))
        }
        for entry in entries {
            var ours: [UInt8] = []
            EntryJSON.append(entry, to: &ours)
            let theirs = [UInt8](try JSONRPC.makeEncoder().encode(entry))
            #expect(ours == theirs, "\(String(decoding: ours, as: UTF8.self)) != \(String(decoding: theirs, as: UTF8.self))")
        }
        // Pages decode as ordinary responses and stay under the line limit.
        let cursor = ListingCursor(entries, limit: 5)
        var decoded: [Entry] = []
        while !cursor.isExhausted {
            let page = cursor.nextPage()
            let line = ListingCursor.line(id: .string("a\"b"), entries: page.json, nextCursor: cursor.isExhausted ? nil : "1.1")
            #expect(line.count <= maximumLineLength + 1 && page.count <= 5)
            let response = try JSONDecoder().decode(Response<ListResult>.self, from: Data(line))
            #expect(response.id == .string("a\"b") && (response.result.nextCursor == nil) == cursor.isExhausted)
            decoded += response.result.entries
        }
        #expect(decoded == entries)
    }

    // MARK: - Paths

    @Test func utf8PathsTravelAsTheyAre() throws {
        let path = WirePath("Documents/café report.pdf")
        #expect(path.text == "Documents/café report.pdf" && path.base64 == nil)
        #expect(try WirePath(text: path.text, base64: nil).relativePath().description == "Documents/café report.pdf")
    }

    @Test func nonUTF8PathsRoundTripThroughBase64() throws {
        let bytes: [UInt8] = [0x63, 0x61, 0x66, 0xE9, 0x2F, 0x67, 0x72, 0xE9, 0x2E, 0x74, 0x78, 0x74]  // Latin-1 "café/gré.txt"
        let path = WirePath(bytes: bytes)
        #expect(path.text == "caf\\xE9/gr\\xE9.txt")
        let base64 = try #require(path.base64)
        let back = try WirePath(text: path.text, base64: base64)
        #expect(back.bytes == bytes)
        #expect(try back.relativePath().bytes == bytes)
        // The bytes field wins over the text.
        #expect(try WirePath(text: "other", base64: base64).bytes == bytes)
        #expect(throws: WirePathError.badBase64("%%%")) { try WirePath(text: nil, base64: "%%%") }
        #expect(throws: WirePathError.missing) { try WirePath(text: nil, base64: nil) }
    }

    @Test(arguments: [
        ("../etc/passwd", RelativePath.Invalid.parentReference),
        ("a/../../b", .parentReference),
        ("/etc/passwd", .absolute),
        ("a\u{0}b", .nulByte),
        ("a//b", .emptyComponent),
        ("a/./b", .emptyComponent),
    ])
    func hostilePathsAreRefused(text: String, reason: RelativePath.Invalid) {
        #expect(throws: WirePathError.invalid(reason)) { try WirePath(text: text, base64: nil).relativePath() }
    }

    @Test func rootAndToleratedForms() throws {
        #expect(try WirePath("").relativePath().isRoot)
        #expect(try WirePath("./a/").relativePath().description == "a")
    }

    // MARK: - Times

    @Test func timesAreRFC3339InUTC() {
        #expect(WireTime.rfc3339(nanoseconds: 0) == "1970-01-01T00:00:00.000000000Z")
        #expect(WireTime.rfc3339(nanoseconds: 1_738_314_902_123_456_789) == "2025-01-31T09:15:02.123456789Z")
        #expect(WireTime.rfc3339(nanoseconds: -1) == "1969-12-31T23:59:59.999999999Z")
        #expect(WireTime.rfc3339(nanoseconds: -1_500_000_000) == "1969-12-31T23:59:58.500000000Z")
        #expect(WireTime.rfc3339(nanoseconds: 1_709_164_800_000_000_000) == "2024-02-29T00:00:00.000000000Z")
        #expect(WireTime.rfc3339(nanoseconds: 951_782_400_000_000_000) == "2000-02-29T00:00:00.000000000Z")
    }

    @Test func timesAgreeWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var random = SeededRandom.forTest("ProtocolTests.timesAgreeWithFoundation")
        for _ in 0..<2000 {
            let seconds = Int64.random(in: -2_208_988_800...4_102_444_800, using: &random)  // 1900 … 2100
            let fraction = Int64.random(in: 0..<1_000_000_000, using: &random)
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
            let nanos = String(fraction)
            let ours = WireTime.rfc3339(nanoseconds: seconds * 1_000_000_000 + fraction)
            #expect(ours == expected.dropLast() + "." + String(repeating: "0", count: 9 - nanos.count) + nanos + "Z",
                    "seed \(random.seed): \(seconds) s + \(fraction) ns")
        }
    }
}
