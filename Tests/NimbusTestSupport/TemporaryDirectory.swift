import Foundation
import Glibc

/// Temporary folders for tests: made with mkdtemp(3) (unique, mode 0700), removed at the end
/// unless `NIMBUS_IT_KEEP=1` asks to keep them for inspection.
public enum TemporaryDirectory {
    /// `NIMBUS_IT_KEEP=1` keeps the temporary folders (and logs) for inspection.
    public static let keep = ProcessInfo.processInfo.environment["NIMBUS_IT_KEEP"] == "1"

    /// A fresh directory `base/prefix-XXXXXX`. Keep `base` short where a socket goes inside:
    /// socket paths are limited to 107 bytes.
    public static func make(_ prefix: String, in base: String = "/tmp") throws -> String {
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw HarnessFailure("mkdtemp \(base)/\(prefix)-XXXXXX failed: \(String(cString: strerror(errno)))")
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes `path` and everything below it, or says where it was kept (`label` names the test).
    public static func remove(_ path: String, label: String) {
        if keep {
            print("[\(label)] kept \(path)")
        } else {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Copies those of `files` that exist into a new folder that is never removed, and returns
    /// a line naming it, for a failure message: the test's own folders go at its end, and the
    /// last lines of a log in the message do not always say what happened before.
    public static func keepCopies(of files: [String], label: String) -> String {
        let present = files.filter { FileManager.default.fileExists(atPath: $0) }
        guard !present.isEmpty else { return "[\(label)] no log to keep" }
        do {
            let folder = try make("nimbus-kept-logs")
            for file in present {
                let name = file.split(separator: "/").suffix(2).joined(separator: "-")
                try FileManager.default.copyItem(atPath: file, toPath: folder + "/" + name)
            }
            return "[\(label)] logs kept in \(folder)"
        } catch {
            return "[\(label)] could not keep the logs (\(error))"
        }
    }
}
