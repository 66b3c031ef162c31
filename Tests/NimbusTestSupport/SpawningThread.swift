import Foundation

/// The one thread that starts every `BackgroundProcess`. Each child asks the kernel to kill it
/// when the thread that started it ends (`PR_SET_PDEATHSIG`, set by `setpriv --pdeathsig KILL`
/// before the program runs), so a test process that crashes leaves no nimbusd behind: once
/// about a hundred orphans used up `fs.inotify.max_user_instances` for everyone. The signal
/// comes when the *thread* that forked ends, not the process, and the test runner's threads
/// may end while a test still runs: children are therefore started from this thread, which
/// never ends before the process does.
///
/// Who owns what: jobs go through `jobs` (a `WaitingQueue`, locked); each job's `result` is
/// written on this thread before its semaphore is signalled and read by the caller after.
final class SpawningThread: @unchecked Sendable {
    static let shared = SpawningThread()

    private let jobs = WaitingQueue<() -> Void>()

    private init() {
        let thread = Thread { [self] in serve() }
        thread.name = "parent of test children"
        thread.start()
    }

    private func serve() {
        while true { jobs.next()() }
    }

    /// Runs `body` on this thread, waiting for it, and returns what it returned or threw.
    func run<T>(_ body: @escaping () throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        var result: Result<T, any Error>?
        jobs.append {
            result = Result { try body() }
            done.signal()
        }
        done.wait()
        return try result!.get()
    }

    /// `setpriv --pdeathsig KILL --`, the words that make a program die with this thread; none
    /// where util-linux's setpriv is missing (the children then outlive a crash, as before).
    static let dieWithParent: [String] = {
        let setpriv = "/usr/bin/setpriv"
        return FileManager.default.isExecutableFile(atPath: setpriv) ? [setpriv, "--pdeathsig", "KILL", "--"] : []
    }()
}
