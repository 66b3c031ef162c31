@testable import NimbusClient
import Testing

/// Paths on the command line become paths relative to the local root.
struct PathResolverTests {
    let root = "/home/ann/Nimbus"

    func resolver(cwd: String, pwd: String? = nil, resolvedRoot: String? = nil) -> PathResolver {
        PathResolver(localRoot: root, resolvedRoot: resolvedRoot, currentDirectory: cwd, logicalCurrentDirectory: pwd,
                     environment: ["HOME": "/home/ann"])
    }

    @Test(arguments: [
        // Inside the synced folder: from the current folder.
        ("/home/ann/Nimbus/Photos", "2024/a.jpg", "Photos/2024/a.jpg"),
        ("/home/ann/Nimbus/Photos", ".", "Photos"),
        ("/home/ann/Nimbus/Photos", "..", ""),
        ("/home/ann/Nimbus/Photos", "../Docs/./b", "Docs/b"),
        ("/home/ann/Nimbus", "a", "a"),
        // Elsewhere: from the root of the synced folder.
        ("/tmp", "Photos/2024", "Photos/2024"),
        ("/tmp", "./Photos//2024/", "Photos/2024"),
        ("/tmp", ".", ""),
        // Absolute, and ~, inside the synced folder.
        ("/tmp", "/home/ann/Nimbus/Docs/c.txt", "Docs/c.txt"),
        ("/tmp", "/home/ann/Nimbus", ""),
        ("/tmp", "~/Nimbus/Docs", "Docs"),
    ])
    func resolves(_ cwd: String, _ argument: String, _ expected: String) throws {
        #expect(try resolver(cwd: cwd).protocolPath(argument) == expected)
    }

    @Test(arguments: [
        ("/tmp", "/etc/passwd"),
        ("/tmp", "/home/ann/NimbusOther/x"),
        ("/tmp", "../x"),
        ("/tmp", "a/../../x"),
        ("/home/ann/Nimbus/Photos", "../../x"),
        ("/tmp", "~/Documents"),
        ("/tmp", ""),
    ])
    func refusesPathsOutsideTheSyncedFolder(_ cwd: String, _ argument: String) {
        #expect(throws: UsageError.self, "\(argument)") { try resolver(cwd: cwd).protocolPath(argument) }
    }

    @Test func theErrorNamesTheFolder() {
        do {
            _ = try resolver(cwd: "/tmp").protocolPath("/etc/passwd")
            Issue.record("accepted /etc/passwd")
        } catch {
            #expect(error.message == "'/etc/passwd' is outside the synced folder")
            #expect(error.reason.contains(root))
            #expect(error.suggestion.contains(root))
        }
    }

    @Test func symlinkedRootsAndCurrentFolders() throws {
        // ~/Nimbus is a symlink to /data/Nimbus; getcwd reports the resolved path.
        let physical = resolver(cwd: "/data/Nimbus/Photos", resolvedRoot: "/data/Nimbus")
        #expect(try physical.protocolPath("a.jpg") == "Photos/a.jpg")
        #expect(try physical.protocolPath("/data/Nimbus/x") == "x")
        #expect(physical.currentFolder == "Photos")
        // The shell's $PWD keeps the spelled path even where getcwd does not match the root.
        let logical = resolver(cwd: "/elsewhere/Photos", pwd: "/home/ann/Nimbus/Photos")
        #expect(try logical.protocolPath("a.jpg") == "Photos/a.jpg")
    }

    @Test func currentFolderAndLocalPaths() {
        #expect(resolver(cwd: "/tmp").currentFolder == nil)
        #expect(resolver(cwd: root).currentFolder == "")
        #expect(resolver(cwd: "/tmp").localPath("a/b") == "/home/ann/Nimbus/a/b")
        #expect(resolver(cwd: "/tmp").localPath("") == root)
    }
}
