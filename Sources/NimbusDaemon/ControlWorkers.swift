import Dispatch
import Synchronization

/// A few serial queues for requests that read the disk (`list`, `stat`, `versions`), so a
/// slow one never holds up the server thread and at most a few run at once.
final class ControlWorkers: Sendable {
    private let queues: [DispatchQueue]
    private let next = Atomic<Int>(0)

    init(count: Int) {
        queues = (0..<count).map { DispatchQueue(label: "nimbus.control.worker\($0)") }
    }

    func run(_ work: @escaping @Sendable () -> Void) {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        queues[abs(index % queues.count)].async(execute: work)
    }
}
