import Glibc

/// What a command-line tool needs to know about its terminal: whether a descriptor is one, and
/// how wide it is. Used by `nimbusctl` to decide on colour, progress bars and column widths.
public enum Terminal {
    public static let standardOutput: Int32 = STDOUT_FILENO
    public static let standardError: Int32 = STDERR_FILENO

    /// Whether `descriptor` refers to a terminal. The corresponding C function is `isatty`.
    public static func isTerminal(_ descriptor: Int32) -> Bool {
        Sys.isTerminal(descriptor)
    }

    /// The width of the terminal on `descriptor` in columns, or nil when it is not a terminal
    /// or reports no width (a pseudo-terminal that was never sized says 0). The corresponding
    /// C call is `ioctl(fd, TIOCGWINSZ, &winsize)`.
    public static func columns(of descriptor: Int32) -> Int? {
        guard let size = try? Sys.terminalSize(descriptor), size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}
