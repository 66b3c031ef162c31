import NimbusProtocol

/// Turns paths as the user typed them into protocol paths (relative to the local root, ""
/// for the root), the way a user standing in a folder expects:
///
/// - inside the synced folder, a relative path starts from the current folder
///   (`cd ~/Nimbus/Photos && nimbusctl info 2024` means `Photos/2024`);
/// - elsewhere, a relative path starts from the synced folder's root
///   (`nimbusctl info Photos/2024` from anywhere);
/// - an absolute path (or `~/…`) must lie inside the synced folder.
///
/// Pure: the roots and current folders are given. Symlinks are handled by giving both the
/// spelled and the resolved form of each (`getcwd` gives the resolved one, `$PWD` the one
/// the shell shows).
struct PathResolver: Sendable {
    /// The local root as the daemon reports it, and the same with symlinks resolved.
    var roots: [String]
    /// The current folder, resolved and as the shell spells it (`$PWD`).
    var currentDirectories: [String]
    var environment: [String: String] = [:]

    init(localRoot: String, resolvedRoot: String? = nil, currentDirectory: String,
         logicalCurrentDirectory: String? = nil, environment: [String: String] = [:]) {
        roots = unique([localRoot, resolvedRoot].compactMap { $0 }.map(Locations.normalize))
        currentDirectories = unique([currentDirectory, logicalCurrentDirectory].compactMap { $0 }
                                    .filter { $0.hasPrefix("/") }.map(Locations.normalize))
        self.environment = environment
    }

    var localRoot: String { roots[0] }

    /// The folder inside the synced folder the user stands in (a protocol path), if any.
    var currentFolder: String? {
        for directory in currentDirectories {
            if let relative = relativeToRoot(directory) { return relative }
        }
        return nil
    }

    func protocolPath(_ argument: String) throws(UsageError) -> String {
        if argument.isEmpty {
            throw .invalid("the path is empty", reason: "expected a file or folder inside \(localRoot)", command: nil)
        }
        if argument.contains("\0") {
            throw .invalid("the path contains a NUL byte", reason: "file names cannot contain NUL", command: nil)
        }
        let isAbsolute = argument.hasPrefix("/") || argument == "~" || argument.hasPrefix("~/")
        let base: String
        if isAbsolute {
            base = "/"
        } else if let directory = currentDirectories.first(where: { relativeToRoot($0) != nil }) {
            base = directory
        } else {
            // Outside the synced folder: relative to its root; `..` may not climb out of it.
            let joined = Locations.normalize(localRoot + "/" + argument)
            guard let relative = relativeToRoot(joined), !climbsOut(argument) else {
                throw outside(argument, resolved: joined)
            }
            return relative
        }
        let absolute: String
        do throws(LocationError) {
            absolute = try Locations.absolutePath(argument, currentDirectory: base, environment: environment)
        } catch {
            throw .invalid("cannot use the path '\(argument)'", reason: error.description, command: nil)
        }
        guard let relative = relativeToRoot(absolute) else { throw outside(argument, resolved: absolute) }
        return relative
    }

    /// Whether `..` takes a root-relative path above the root (`../x`, `a/../../x`).
    func climbsOut(_ relative: String) -> Bool {
        var depth = 0
        for part in relative.split(separator: "/") {
            if part == ".." { depth -= 1 } else if part != "." { depth += 1 }
            if depth < 0 { return true }
        }
        return false
    }

    /// `absolute` relative to whichever spelling of the root contains it.
    func relativeToRoot(_ absolute: String) -> String? {
        for root in roots where Locations.isSameOrInside(absolute, root) {
            return absolute == root ? "" : String(absolute.dropFirst(root == "/" ? 1 : root.count + 1))
        }
        return nil
    }

    /// The file on disk for a protocol path.
    func localPath(_ relative: String) -> String {
        relative.isEmpty ? localRoot : (localRoot == "/" ? "/" : localRoot + "/") + relative
    }

    func outside(_ argument: String, resolved: String) -> UsageError {
        UsageError(message: "'\(argument)' is outside the synced folder",
                   reason: "it resolves to \(resolved), and nimbusctl only knows files inside \(localRoot)",
                   suggestion: "give a path inside \(localRoot), or a path relative to it")
    }
}

private func unique(_ items: [String]) -> [String] {
    var seen: Set<String> = []
    return items.filter { seen.insert($0).inserted }
}
