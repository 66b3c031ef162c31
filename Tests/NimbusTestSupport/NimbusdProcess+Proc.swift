import Foundation
import Glibc

/// What /proc says about the daemon of the last launch: where its threads wait, its CPU time.
extension NimbusdProcess {
    /// Where each thread waits (name, kernel wait channel, syscall number): why a daemon hangs.
    public func threadStates() -> String {
        guard let pid, isRunning else { return "" }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return "threads of the daemon (name, wait channel, syscall):\n" + tasks.sorted().map { tid in
            let read = { (file: String) in
                ((try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/\(file)", encoding: .utf8)) ?? "?")
                    .split(separator: "\n").first.map(String.init) ?? ""
            }
            return "  \(tid) \(read("comm")) \(read("wchan")) \(read("syscall").split(separator: " ").first ?? "")"
        }.joined(separator: "\n")
    }

    /// CPU time (user + system) of all its threads so far, from /proc/PID/stat (clock ticks).
    public func cpuSeconds() -> Double? {
        guard let pid, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // The fields after the command name, which is in parentheses and may hold spaces.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))  // utime, stime: fields 14 and 15
    }
}
