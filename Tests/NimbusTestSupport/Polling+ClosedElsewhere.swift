import NimbusSystem
import NimbusVocabulary

extension Polling {
    /// Returns once no other process has `file` of `fs` open, for a test about to hand a file it
    /// has just written to the copier, the installer or a removal. `swift test` runs suites in
    /// parallel in one process, and a child that another test starts (posix_spawn) holds a copy
    /// of every descriptor of this process from its fork until it execs: close-on-exec closes
    /// them only then. Under load that lasts long enough for the product to see the file still
    /// open for writing and rightly leave it alone (a copy refused as mid-rewrite, a replace or
    /// removal refused as in use). The child's copy is gone once it execs, and no child forked
    /// after the test's own close can have one. Nothing to wait for where leases are refused
    /// (`isOpenElsewhere` is nil there).
    public static func untilClosedElsewhere(_ file: RelativePath, in fs: DiskFileSystem, timeout: Duration = .seconds(60)) throws {
        try untilClosedElsewhere("\(file)", timeout: timeout) { fs.isOpenElsewhere(file) }
    }

    /// The same for a file that `isOpenElsewhere` asks about (true, false, or nil where leases
    /// are refused), named `file` in the failure.
    public static func untilClosedElsewhere(_ file: String, timeout: Duration = .seconds(60),
                                            isOpenElsewhere: () -> Bool?) throws {
        try wait("no other process to hold \(file) open", timeout: timeout, interval: .milliseconds(5)) {
            isOpenElsewhere() != true
        }
    }
}
