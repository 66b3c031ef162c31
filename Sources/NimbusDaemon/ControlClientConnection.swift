import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

/// One control connection, owned by the server thread (never touched from elsewhere): its
/// socket, the unfinished input line, the bytes waiting to be sent, and what it asked for.
final class ControlClientConnection {
    let id: UInt64
    let socket: UnixStreamSocket
    let pid: Int32
    let uid: UInt32
    var framer = LineFramer()

    /// Bytes waiting to be sent, in chunks (a big answer is never copied to be queued):
    /// `output[head...]`, of which `headOffset` bytes of the first are already sent.
    private var output: [[UInt8]] = []
    private var head = 0
    private var headOffset = 0
    private(set) var outputCount = 0

    /// Requests answered later (engine thread, workers, leases) that are not answered yet.
    var inFlight = 0
    /// The peer shut down its sending side (`shutdown(SHUT_WR)`, e.g. `socat` at the end of
    /// its input): answer what is in flight, then close.
    var readClosed = false
    /// Close once the output is sent (after the answer to an oversize line).
    var closeAfterFlush = false
    var isOpen = true

    var watching = false
    var wantsProgress = true
    /// The listing whose next page `list {"cursor": …}` returns.
    var listing: (token: String, cursor: ListingCursor)?
    var listingCounter = 0

    var owner: OwnerID { OwnerID(rawValue: id) }

    init(id: UInt64, socket: UnixStreamSocket, pid: Int32, uid: UInt32) {
        self.id = id
        self.socket = socket
        self.pid = pid
        self.uid = uid
    }

    var hasOutput: Bool { outputCount > 0 }

    func queue(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        output.append(bytes)
        outputCount += bytes.count
    }

    enum FlushResult { case done, blocked, failed(any Error) }

    /// Sends as much as the socket takes now.
    func flush() -> FlushResult {
        defer { compact() }
        while head < output.count {
            let chunk = output[head]
            let sent: Int
            do {
                sent = try chunk.withUnsafeBytes { buffer in
                    try socket.send(UnsafeRawBufferPointer(rebasing: buffer[headOffset...]))
                }
            } catch where Errno(of: error) == .wouldBlock {
                return .blocked
            } catch {
                return .failed(error)
            }
            headOffset += sent
            outputCount -= sent
            if headOffset == chunk.count {
                output[head] = []
                head += 1
                headOffset = 0
            }
        }
        return .done
    }

    /// Drops sent chunks once they are many, so queueing and sending stay O(1) amortised.
    private func compact() {
        if head == output.count {
            output.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > output.count {
            output.removeFirst(head)
            head = 0
        }
    }

    /// Whether everything is said and the connection can go.
    var isFinished: Bool {
        (closeAfterFlush && !hasOutput) || (readClosed && inFlight == 0 && !hasOutput)
    }

    var description: String { "control client \(id) (pid \(pid), uid \(uid))" }
}
