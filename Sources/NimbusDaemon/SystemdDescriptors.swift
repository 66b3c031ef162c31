import NimbusSystem

/// Descriptors systemd hands a service (sd_listen_fds(3)): `LISTEN_FDS` of them from
/// descriptor 3, named by `LISTEN_FDNAMES`, meant for this process only when `LISTEN_PID` is
/// its pid. nimbusd gets back the fanotify group it stored with `FDSTORE=1` before a crash.
enum SystemdDescriptors {
    /// The name nimbusd stores its fanotify group under (`FDNAME=`).
    static let fanotifyGroupName = "fanotify"

    /// The descriptor passed as `name`; nil when there is none for this process.
    static func named(_ name: String, environment: [String: String], pid: Int32 = ProcessSupport.processID) -> FileDescriptor? {
        guard environment["LISTEN_PID"].flatMap(Int32.init) == pid,
              let count = environment["LISTEN_FDS"].flatMap(Int32.init), count > 0 else { return nil }
        let names = (environment["LISTEN_FDNAMES"] ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        for index in 0..<count where Int(index) < names.count && names[Int(index)] == name {
            return FileDescriptor(rawValue: 3 + index)
        }
        return nil
    }
}
