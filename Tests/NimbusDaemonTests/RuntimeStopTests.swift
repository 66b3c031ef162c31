import Synchronization
import Testing
import NimbusProtocol
import NimbusVocabulary
@testable import NimbusDaemon

/// What the runtime still owes its clients when it stops.
@Suite struct RuntimeStopTests {
    /// A download asked for just after the stop (its work posted behind the stop, so the loop
    /// never runs it) is answered `daemon_stopping`. Before, its completion was never called:
    /// `nimbusctl download` waited until the daemon closed its connection, and then said it
    /// had lost the daemon.
    @Test func aDownloadNeverStartedIsAnsweredAtTheStop() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        runtime.begin()
        runtime.stop()
        let answers = Mutex<[RPCError]>([])
        runtime.download(rp("report.pdf"), .explicit) { result in
            if case .failure(let error) = result { answers.withLock { $0.append(ControlHandler.failure(error)) } }
        }
        #expect(!runtime.step(), "the loop ends at the stop")
        runtime.finish()
        let answered = answers.withLock { $0 }
        #expect(answered.map(\.name) == [.daemonStopping], "\(answered)")
    }
}
