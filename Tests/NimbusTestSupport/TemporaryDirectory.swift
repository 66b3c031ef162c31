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
}
