import Glibc
import NimbusVocabulary
import Synchronization

/// Where nimbusd's log lines go (stderr), written so that logging never holds up the sync. A
/// pipe or socket whose reader does not read fills up (a pipe holds 64 KiB), and a blocking
/// write then stopped whichever thread logged (the engine's) until someone read: the daemon
/// neither synced nor answered. A line that finds no room now is dropped and counted; the next
/// line that finds room is preceded by a notice of how many were dropped.
///
/// How a write avoids waiting, by what stderr is: a socket (journald's stream under systemd)
/// is sent to with `MSG_DONTWAIT`; a pipe, FIFO or terminal is opened again through
/// `/proc/self/fd/2` with `O_NONBLOCK`, a file description of its own, so that the flag does
/// not reach the other holders of stderr's (the shell that shares its terminal); a regular
/// file is written as before (its writes do not wait for a reader).
///
/// Who owns what: any thread may write; `state` (a `Mutex`) keeps lines whole and in order.
public final class LogOutput: Sendable {
    enum Target { case socket(Int32), nonBlocking(Int32), blocking(Int32) }

    private struct State {
        /// Lines dropped since the last one written.
        var dropped = 0
        /// A line was cut off part of the way: the next write starts a line of its own.
        var torn = false
    }

    private let target: Target
    private let state = Mutex(State())

    /// How long the rest of a line that was written in part may wait for room: only a line
    /// longer than a pipe's atomic `PIPE_BUF` (4 KiB), or on a socket, is ever written in part.
    static var restOfLineWait: Duration { .milliseconds(100) }

    init(target: Target) { self.target = target }

    /// The process's stderr, looked at once. The corresponding C functions are `fstat` and `open`.
    public static let standardError: LogOutput = {
        let fd = STDERR_FILENO
        guard let status = try? Sys.fstat(fd) else { return LogOutput(target: .blocking(fd)) }
        switch status.st_mode & S_IFMT {
        case S_IFSOCK:
            return LogOutput(target: .socket(fd))
        case S_IFIFO, S_IFCHR where Sys.isTerminal(fd):
            // No reader left (ENXIO), no /proc: written as before (a pipe without reader fails at once).
            let flags = O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY
            guard let own = try? Sys.openat(AT_FDCWD, SystemPath("/proc/self/fd/\(fd)"), flags, 0) else {
                return LogOutput(target: .blocking(fd))
            }
            return LogOutput(target: .nonBlocking(own))
        default:
            return LogOutput(target: .blocking(fd))
        }
    }()

    /// Writes `line` (one whole line, ending in a newline) unless there is no room for it now;
    /// `noticeOfDropped(n)` is the line written first after `n` lines were dropped.
    public func write(_ line: String, noticeOfDropped: (Int) -> String) {
        state.withLock { state in
            if state.dropped > 0 || state.torn {
                let notice = (state.torn ? "\n" : "") + (state.dropped > 0 ? noticeOfDropped(state.dropped) : "")
                guard record(send(Array(notice.utf8)), in: &state) else {
                    state.dropped += 1
                    return
                }
                state.dropped = 0
            }
            if !record(send(Array(line.utf8)), in: &state) { state.dropped += 1 }
        }
    }

    private enum Outcome { case whole, nothing, part, failed }

    /// True when the bytes went out whole; a part written marks the line torn.
    private func record(_ outcome: Outcome, in state: inout State) -> Bool {
        switch outcome {
        case .whole:
            state.torn = false
            return true
        case .part:
            state.torn = true
            return false
        case .nothing:
            return false
        case .failed:
            // The reader is gone (EPIPE) or the output broken: nothing to say, and no one to say it to.
            return true
        }
    }

    private func send(_ bytes: [UInt8]) -> Outcome {
        var written = 0
        while written < bytes.count {
            let count: Int
            do {
                count = try bytes.withUnsafeBytes { all in
                    let rest = UnsafeRawBufferPointer(rebasing: all[written...])
                    switch target {
                    case .socket(let fd): return try Sys.send(fd, rest, waiting: false)
                    case .nonBlocking(let fd), .blocking(let fd): return try Sys.write(fd, rest)
                    }
                }
            } catch let error as Errno where error == .wouldBlock {
                if written == 0 { return .nothing }
                // Part of the line is out: its rest may wait a little for room, not more.
                guard (try? Sys.poll(descriptor, Int16(POLLOUT), Self.restOfLineWait)) == true else { return .part }
                continue
            } catch {
                return .failed
            }
            written += count
        }
        return .whole
    }

    private var descriptor: Int32 {
        switch target {
        case .socket(let fd), .nonBlocking(let fd), .blocking(let fd): fd
        }
    }
}
