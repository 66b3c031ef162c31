import Foundation
import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusDaemon
import NimbusTestSupport

extension ControlServerTests {
    /// The default `LeaseProvider` on its own: the server relies on these promises. Its waits run
    /// as Swift tasks, so these tests are async and never block a thread of the shared pool
    /// (other tests in this process do, which can delay them, hence the long time limits).
    @Suite struct LeaseProvider {
        /// Collects completions, which may come on any thread.
        final class Results: Sendable {
            let values = Mutex<[Result<LockID, LeaseFailure>]>([])
            func add(_ result: Result<LockID, LeaseFailure>) { values.withLock { $0.append(result) } }
            var all: [Result<LockID, LeaseFailure>] { values.withLock { $0 } }
        }

        let a = OwnerID(rawValue: 1), b = OwnerID(rawValue: 2)
        func path(_ text: String) -> RelativePath { try! RelativePath(validating: text) }

        @Test func aTimeLimitEndsInBusyNamingTheHolder() async throws {
            let leases = PathLocksLeaseProvider()
            let results = Results()
            leases.acquire(path("db"), mode: .exclusive, owner: a, timeout: .zero) { results.add($0) }
            leases.acquire(path("db/x"), mode: .shared, owner: b, timeout: .milliseconds(50)) { results.add($0) }
            try await Polling.until("both answers", timeout: .seconds(120)) { results.all.count == 2 }
            guard case .success(let held) = results.all[0], case .failure(.busy(let holders)) = results.all[1] else {
                Issue.record("\(results.all)")
                return
            }
            #expect(holders.map(\.id) == [held])
            #expect(leases.snapshot().count == 1, "the timed-out request left the table")
        }

        @Test func closingAConnectionWithdrawsItsWaitsAndFreesItsLeases() async throws {
            let leases = PathLocksLeaseProvider()
            let results = Results()
            leases.acquire(path("db"), mode: .exclusive, owner: a, timeout: nil) { results.add($0) }
            try await Polling.until("the first lease", timeout: .seconds(120)) { results.all.count == 1 }
            leases.acquire(path("db"), mode: .exclusive, owner: b, timeout: nil) { results.add($0) }
            leases.acquire(path("db"), mode: .shared, owner: a, timeout: nil) { results.add($0) }
            try await Polling.until("both to wait", timeout: .seconds(120)) { leases.snapshot().count == 3 }
            // b goes away while waiting, then a (holding one lease, waiting for another).
            leases.releaseAll(owner: b)
            leases.releaseAll(owner: a)
            try await Polling.until("the waits to be withdrawn", timeout: .seconds(120)) { results.all.count == 3 }
            #expect(results.all.dropFirst().allSatisfy { $0 == .failure(.withdrawn) }, "\(results.all)")
            #expect(leases.snapshot().isEmpty)
            // Only the holder may release, and only once.
            leases.acquire(path("db"), mode: .shared, owner: a, timeout: .zero) { results.add($0) }
            guard case .success(let lease)? = results.all.last else { Issue.record("\(results.all)"); return }
            #expect(!leases.release(lease, owner: b))
            #expect(leases.release(lease, owner: a))
            #expect(!leases.release(lease, owner: a))
        }
    }

    @Test func leasesEndWithTheirConnection() throws {
        let daemon = try DaemonProcess { try $0.write("db/data.sqlite", "x") }
        try daemon.waitUntilIdle()
        var holder: SocketClient? = try daemon.client()
        let other = try daemon.client()
        let lease = try #require(try holder?.result("acquire", #"{"path":"db","mode":"exclusive"}"#)["lease"]?.int)
        let busy = try other.call("acquire", #"{"path":"db/data.sqlite","mode":"shared","timeoutSeconds":0.2}"#)
        #expect(busy.errorName == "busy" && busy["error"]?["data"]?["reason"]?.string?.contains("lease \(lease)") == true, "\(busy)")
        #expect(try other.call("release", "{\"lease\":\(lease)}").errorName == "not_found", "only the holder may release")
        // A waiting request is granted once the holder's connection goes away.
        try other.send(#"{"jsonrpc":"2.0","id":77,"method":"acquire","params":{"path":"db/data.sqlite","mode":"shared"}}"#)
        holder = nil
        let granted = try other.readAnswer()
        #expect(granted["id"]?.int == 77 && granted["result"]?["mode"]?.string == "shared", "\(granted)")
        let locks = try #require(try other.result("locks")["locks"]?.array)
        #expect(locks.count == 1 && locks.first?["mine"]?.bool == true)
    }
}
