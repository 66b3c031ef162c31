import Testing
import NimbusProtocol

@Suite struct LocationsTests {
    let home = ["HOME": "/home/u"]

    @Test func xdgDirectoriesFallBackToTheSpecDefaults() {
        #expect(Locations.configHome(home) == "/home/u/.config")
        #expect(Locations.stateHome(home) == "/home/u/.local/state")
        #expect(Locations.dataHome(home) == "/home/u/.local/share")
        #expect(Locations.runtimeDirectory(home) == nil)
        #expect(Locations.configHome([:]) == nil)
    }

    @Test func xdgVariablesWinOverHome() {
        let environment = home.merging(["XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s/", "XDG_DATA_HOME": "/d//x",
                                        "XDG_RUNTIME_DIR": "/run/user/1000"]) { $1 }
        #expect(Locations.configHome(environment) == "/c")
        #expect(Locations.stateHome(environment) == "/s")
        #expect(Locations.dataHome(environment) == "/d/x")
        #expect(Locations.runtimeDirectory(environment) == "/run/user/1000")
    }

    /// The XDG spec: "If an implementation encounters a relative path in any of these
    /// variables it should consider the path invalid and ignore it."
    @Test(arguments: ["", "relative/config", "~/config", "./c"])
    func relativeOrEmptyXdgValuesAreIgnored(value: String) {
        let environment = home.merging(["XDG_CONFIG_HOME": value, "XDG_RUNTIME_DIR": value]) { $1 }
        #expect(Locations.configHome(environment) == "/home/u/.config")
        #expect(Locations.runtimeDirectory(environment) == nil)
    }

    @Test func relativeHomeIsIgnored() {
        #expect(Locations.home(["HOME": "home/u"]) == nil)
        #expect(Locations.stateHome(["HOME": ""]) == nil)
    }

    @Test func nimbusPathsOfAUserSession() throws {
        let environment = home.merging(["XDG_RUNTIME_DIR": "/run/user/1000"]) { $1 }
        #expect(try Locations.defaultLocalFolder(environment: environment) == "/home/u/Nimbus")
        #expect(try Locations.defaultCloudFolder(environment: environment) == "/home/u/.local/share/nimbus/cloud")
        #expect(try Locations.configFile(instance: "work", environment: environment) == "/home/u/.config/nimbus/work.conf")
        #expect(try Locations.stateDirectory(instance: "work", environment: environment) == "/home/u/.local/state/nimbus/work")
        #expect(try Locations.socketPath(instance: "work", environment: environment, uid: 1000) == "/run/user/1000/nimbus/work.sock")
    }

    @Test func systemdDirectoriesTakePrecedence() throws {
        let environment = home.merging([
            "XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c",
            "STATE_DIRECTORY": "/var/lib/nimbus:/var/lib/other", "RUNTIME_DIRECTORY": "/run/nimbus",
            "CONFIGURATION_DIRECTORY": "/etc/nimbus",
        ]) { $1 }
        #expect(try Locations.stateDirectory(instance: "srv", environment: environment) == "/var/lib/nimbus/srv")
        #expect(try Locations.socketPath(instance: "srv", environment: environment, uid: 0) == "/run/nimbus/srv.sock")
        #expect(try Locations.configFile(instance: "srv", environment: environment) == "/etc/nimbus/srv.conf")
        #expect(try Locations.systemSocketPath(instance: "srv") == "/run/nimbus/srv.sock")
    }

    @Test func relativeSystemdDirectoriesAreIgnored() throws {
        let environment = home.merging(["STATE_DIRECTORY": "nimbus"]) { $1 }
        #expect(try Locations.stateDirectory(instance: "a", environment: environment) == "/home/u/.local/state/nimbus/a")
    }

    @Test func socketFallsBackToAPerUserDirectoryInTmp() throws {
        #expect(try Locations.socketPath(instance: "default", environment: home, uid: 1000) == "/tmp/nimbus-1000/default.sock")
        #expect(try Locations.socketPath(instance: "default", environment: [:], uid: 0) == "/tmp/nimbus-0/default.sock")
        #expect(Locations.socketDirectory(environment: home, uid: 42) == "/tmp/nimbus-42")
    }

    @Test func withoutHomeTheStateDirectoryCannotBePlaced() {
        #expect(throws: LocationError.homeNotSet(neededFor: "the state directory")) {
            try Locations.stateDirectory(instance: "default", environment: [:])
        }
        #expect(throws: LocationError.self) { try Locations.defaultLocalFolder(environment: [:]) }
    }

    @Test(arguments: ["default", "work", "a", "work.2", "A_b-C", "x.", String(repeating: "n", count: 64)])
    func validInstanceNames(name: String) throws {
        try Locations.validateInstanceName(name)
    }

    @Test(arguments: [
        ("", "it is empty"), (".hidden", "starts with '.'"), ("..", "starts with '.'"), ("a/b", "'/'"),
        ("../x", "'/'"), ("a b", "U+0020"), ("café", "'é'"), ("tab\t", "U+0009"),
        (String(repeating: "n", count: 65), "65 characters long"),
    ])
    func invalidInstanceNames(name: String, reason: String) {
        do {
            try Locations.validateInstanceName(name)
            Issue.record("\(name) was accepted")
        } catch {
            #expect(error.description.contains(reason), "\(error)")
            #expect(error.description.contains("use 1 to 64 letters, digits"))
        }
        #expect(throws: LocationError.self) { try Locations.socketPath(instance: name, environment: home, uid: 1) }
        #expect(throws: LocationError.self) { try Locations.configFile(instance: name, environment: home) }
    }

    @Test(arguments: [
        ("~", "/home/u"), ("~/", "/home/u"), ("~/Sync", "/home/u/Sync"), ("/abs//path/", "/abs/path"),
        ("rel", "/work/dir/rel"), ("./rel/.", "/work/dir/rel"), ("../up", "/work/up"), ("/a/b/../../..", "/"),
        ("a/./b/../c", "/work/dir/a/c"),
    ])
    func absolutePaths(written: String, expected: String) throws {
        #expect(try Locations.absolutePath(written, currentDirectory: "/work/dir", environment: home) == expected)
    }

    @Test func pathsThatCannotBeResolved() {
        #expect(throws: LocationError.userHomeNotSupported("~bob/x")) {
            try Locations.absolutePath("~bob/x", currentDirectory: "/", environment: home)
        }
        #expect(throws: LocationError.emptyPath) { try Locations.absolutePath("", currentDirectory: "/", environment: home) }
        #expect(throws: LocationError.self) { try Locations.absolutePath("~/x", currentDirectory: "/", environment: [:]) }
    }

    @Test func containment() {
        #expect(Locations.isSameOrInside("/a/b", "/a"))
        #expect(Locations.isSameOrInside("/a", "/a"))
        #expect(!Locations.isSameOrInside("/ab", "/a"))
        #expect(Locations.isSameOrInside("/x", "/"))
    }

    @Test func theVersionIsSemantic() {
        #expect(NimbusVersion.string.split(separator: ".").count == 3)
    }
}
