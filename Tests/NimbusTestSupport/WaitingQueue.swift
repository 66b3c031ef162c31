import Foundation

/// Work for a thread of its own: any thread adds, the one thread takes, waiting while there
/// is none (SpawningThread's children to start, OwnThreadExecutor's jobs).
/// Who owns what: `elements` is touched only with `condition` locked; `@unchecked Sendable`
/// for that lock.
final class WaitingQueue<Element>: @unchecked Sendable {
    /// Guards `elements`; signalled when one is added.
    private let condition = NSCondition()
    private var elements: [Element] = []

    func append(_ element: Element) {
        condition.lock()
        elements.append(element)
        condition.signal()
        condition.unlock()
    }

    /// The oldest element, once there is one.
    func next() -> Element {
        condition.lock()
        defer { condition.unlock() }
        while elements.isEmpty { condition.wait() }
        return elements.removeFirst()
    }
}
