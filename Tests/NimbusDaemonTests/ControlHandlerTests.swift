import Dispatch
import Foundation
import NimbusVocabulary
import Synchronization
import Testing
import NimbusCore
import NimbusProtocol
import NimbusSystem
@testable import NimbusDaemon

/// A pair the control server can serve without an engine: it answers from what the test set,
/// runs engine-thread work on a queue of its own, and notes what it was asked.
/// Who owns what: what it answers and notes is in `record`, a `Mutex`; its "engine thread"
/// is the serial queue `engineThread`. `@unchecked Sendable` only because the protocols ask
/// for `Sendable` and `PathLocks` is a class.
final class FakeControlContext: @unchecked Sendable {
    struct Record {
        var status = EngineStatus()
        var entries: [RelativePath: EntryInfo] = [:]
        var asked: [String] = []
    }
    let record = Mutex(Record())
    let engineThread = DispatchQueue(label: "fake.engine")
    let locks = PathLocks()

    fileprivate func note(_ what: String) { record.withLock { $0.asked.append(what) } }
    var asked: [String] { record.withLock { $0.asked } }
}

extension FakeControlContext: PairView {
    var isPaused: Bool { record.withLock { $0.status.paused } }
    var status: EngineStatus { record.withLock { $0.status } }
    var conflictCount: Int { 0 }
    var errorCount: Int { 0 }
    var deviceName: String { "fake-device" }
    func onEvent(_ handler: (@Sendable (EngineEvent) -> Void)?) {}
    func entry(_ path: RelativePath) -> EntryInfo? { record.withLock { $0.entries[path] } }
    func listEntries(under directory: RelativePath, recursive: Bool) throws -> [EntryInfo] {
        record.withLock { Array($0.entries.values) }.sorted { $0.path < $1.path }
    }
    func conflicts() -> [Conflict] { [] }
    func localMetadata(of path: RelativePath) throws -> FileMetadata? { nil }
    func versions(of path: RelativePath) throws -> [VersionStore.Version] { [] }
    func allVersions(under folder: RelativePath) throws -> [(file: RelativePath, version: VersionStore.Version)] { [] }
    func restorePlan(_ path: RelativePath, versionID: String?, at time: WallInstant?, to target: RelativePath?) throws -> [RestorePlanItem] { [] }
}

extension FakeControlContext: PairCommands {
    func perform(_ work: @escaping @Sendable () -> Void) { engineThread.async(execute: work) }
    func setPaused(_ paused: Bool) {
        perform { [self] in
            record.withLock { $0.status.paused = paused }
        }
    }
    func syncSoon(_ paths: [RelativePath]) { note("syncSoon \(paths)") }
    func sync(_ paths: Set<RelativePath>?) { note("sync") }
    func resolve(_ path: RelativePath, keep choice: ConflictChoice) throws { note("resolve \(path)") }
    func restore(_ items: [RestorePlanItem]) throws {}
    func pruneVersions() -> (removed: Int, removedBytes: Int64)? { (0, 0) }
    func confirmDeletes() -> Int { note("confirmDeletes"); return 3 }
    func revertDeletes() -> Int { 0 }
}

extension FakeControlContext: PairResidency {
    func download(_ path: RelativePath, _ request: DownloadRequest, completion: @escaping DownloadCompletion) {
        perform { [self] in
            note("download \(path) \(request)")
            completion(.success(entry(path)))
        }
    }
    func residentPath(_ path: RelativePath) throws -> RelativePath { path }
    func isPlaceholder(_ path: RelativePath) -> Bool { entry(path)?.state == .notDownloaded }
    func evict(_ path: RelativePath) throws -> EntryInfo? { note("evict \(path)"); return entry(path) }
    func pin(_ path: RelativePath) throws -> EntryInfo? { entry(path) }
    func unpin(_ path: RelativePath) throws -> EntryInfo? { entry(path) }
}

/// The control server and its handler over a fake pair: the protocol without a daemon.
@Suite struct ControlHandlerTests {
    /// A server on a socket in a fresh private directory, serving `pair`.
    static func serve(_ pair: FakeControlContext) throws -> (ControlServer, SocketClient) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-handler-\(UUID().uuidString)").path
        let socket = directory + "/s.sock"
        let setup = ControlSetup(pair: pair, instance: "test", localRoot: "/L", cloudRoot: "/C", startedAt: .origin)
        let server = try ControlServer(socketPath: socket, setup: setup, log: .silent)
        server.start()
        return (server, try SocketClient(socket))
    }

    @Test func answersFromTheContextAndAsksItsEngineThread() throws {
        let pair = FakeControlContext()
        let file = EntryInfo(path: rp("a.txt"), kind: .file, size: 2, mtime: 5, state: .downloaded, conflictCopy: nil, residency: .auto)
        pair.record.withLock {
            $0.status.activity = .idle
            $0.status.tracked = 7
            $0.entries[file.path] = file
        }
        let (server, client) = try Self.serve(pair)
        defer { server.stop() }

        let status = try client.result("status")
        #expect(status["tracked"]?.int == 7 && status["deviceName"]?.string == "fake-device" && status["paused"]?.bool == false)
        let stat = try client.result("stat", #"{"path":"a.txt"}"#)
        #expect(stat["state"]?.string == "downloaded" && stat["size"]?.int == 2)
        #expect(try client.call("stat", #"{"path":"missing"}"#).errorName == "not_found")

        #expect(try client.result("pause")["paused"]?.bool == true)
        #expect(pair.isPaused)
        #expect(try client.call("rescan").errorName == "paused", "a paused pair refuses work that copies")
        #expect(try client.call("evict", #"{"path":"a.txt"}"#).errorName == "paused")
        #expect(try client.result("resume")["paused"]?.bool == false)
        #expect(try client.result("rescan")["tracked"]?.int == 7)
        #expect(try client.result("confirmDeletes")["count"]?.int == 3)
        #expect(try client.result("download", #"{"path":"a.txt"}"#)["state"]?.string == "downloaded")
        #expect(pair.asked == ["sync", "confirmDeletes", "download a.txt explicit"])
    }

    /// Connections refused because too many clients are connected are logged at most once a
    /// second, as refusals of another user's are: a client reconnecting in a loop wrote one
    /// warning per try (seen: 2 000 lines from one script holding 3 000 connections).
    @Test func refusalsOfABusyServerAreNotLoggedOneByOne() throws {
        let lines = LogRepetitionTests.Lines()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-handler-\(UUID().uuidString)").path
        let setup = ControlSetup(pair: FakeControlContext(), instance: "test", localRoot: "/L", cloudRoot: "/C", startedAt: .origin)
        var limits = ControlServer.Limits()
        limits.maximumClients = 2
        let server = try ControlServer(socketPath: directory + "/s.sock", setup: setup, log: lines.logger, limits: limits)
        server.start()
        defer { server.stop() }
        let admitted = try (0..<2).map { _ in try SocketClient(directory + "/s.sock") }
        for client in admitted { #expect(try client.result("status")["clients"] != nil) }
        let refusals = 40
        for _ in 0..<refusals {
            let refused = try SocketClient(directory + "/s.sock")
            #expect(try refused.readAnswer().errorName == "busy")
        }
        let told = lines.count("clients are connected already")
        #expect(told >= 1 && told <= refusals / 2, "\(told) warnings for \(refusals) refusals")
    }

    /// A parameter out of range is `invalid_params` whose reason names it, never an odd
    /// sentence: an empty `versions` list gave "the client " and a version mismatch.
    @Test func outOfRangeParametersAreNamed() throws {
        let pair = FakeControlContext()
        let (server, client) = try Self.serve(pair)
        defer { server.stop() }
        let calls: [(method: String, params: String, names: String)] = [
            ("hello", #"{"versions":[]}"#, "versions: the list is empty"),
            ("hello", #"{"versions":[1.5]}"#, "versions[0]: expected an integer"),
            ("list", #"{"limit":0}"#, "limit: 0 is not between 1 and"),
            ("list", #"{"limit":-3}"#, "limit: -3 is not between 1 and"),
            ("acquire", #"{"path":"a.txt","mode":"shared","timeoutSeconds":-1}"#, "timeoutSeconds: -1"),
            ("release", #"{"lease":-1}"#, "lease:"),
        ]
        for call in calls {
            let answer = try client.call(call.method, call.params)
            let reason = answer["error"]?["data"]?["reason"]?.string ?? ""
            #expect(answer.errorName == "invalid_params" && reason.contains(call.names), "\(call.method) \(call.params) → \(answer)")
            #expect(answer["error"]?["data"]?["suggestion"]?.string?.isEmpty == false, "\(answer)")
        }
        #expect(try client.result("hello", #"{"versions":[1]}"#)["version"]?.int == 1, "the connection still serves")
    }
}
