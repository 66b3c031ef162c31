import FoundationEssentials
import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

extension ControlHandler {
    func dispatch(_ request: ControlRequest) throws {
        switch request.method {
        case .hello: try hello(request)
        case .status: answer(request, status(clients: server.clientCount))
        case .list: try list(request)
        case .stat: try stat(request)
        case .download: try download(request)
        case .evict, .pin, .unpin: try residency(request)
        case .conflicts: try conflicts(request)
        case .resolve: try resolve(request)
        case .versions: try versions(request)
        case .restore: try restore(request)
        case .prune: try prune(request)
        case .pause, .resume: try pause(request, request.method == .pause)
        case .rescan: try rescan(request)
        case .confirmDeletes, .revertDeletes: try decideDeletes(request, confirm: request.method == .confirmDeletes)
        case .watch: try watch(request)
        case .locks: locks(request)
        case .reload: try reload(request)
        case .acquire: try acquire(request)
        case .release: try release(request)
        }
    }

    // MARK: - hello, status

    func hello(_ request: ControlRequest) throws {
        let params = try params(HelloParams.self, request) ?? HelloParams()
        // An empty list is a mistake of the client's, not a version mismatch: said as one.
        guard !params.versions.isEmpty else {
            throw RPCError(.invalidParams, "invalid parameters for hello", reason: "versions: the list is empty; it must name the protocol versions the client speaks",
                           suggestion: "send the versions the client speaks, such as \"versions\": [\(ProtocolVersion.supported.map(String.init).joined(separator: ", "))] (the ones this daemon speaks)")
        }
        guard let version = Set(params.versions).intersection(ProtocolVersion.supported).max() else {
            throw RPCError(.notSupported, "no common protocol version",
                           reason: "the daemon speaks protocol \(ProtocolVersion.supported.map(String.init).joined(separator: ", ")), the client \(params.versions.map(String.init).joined(separator: ", "))",
                           suggestion: "use a nimbusctl of the same release as nimbusd (\(NimbusVersion.string))")
        }
        if let client = params.client { server.log.debug("\(request.client.description) is \(client)") }
        answer(request, HelloResult(version: version, daemonVersion: NimbusVersion.string, instance: setup.instance,
                                    localRoot: setup.localRoot, cloudRoot: setup.cloudRoot,
                                    deviceName: view.deviceName, pid: ProcessInfo.processInfo.processIdentifier))
    }

    func status(clients: Int) -> StatusResult {
        let status = view.status
        let (phase, reason) = Self.describe(status.phase)
        return StatusResult(phase: phase, reason: reason, paused: status.paused, tracked: status.tracked,
                            heldDeletes: status.heldDeletes, conflicts: view.conflictCount,
                            bytesCopied: status.bytesCopied, filesCopied: status.filesCopied, lastError: status.lastError,
                            instance: setup.instance, localRoot: setup.localRoot, cloudRoot: setup.cloudRoot,
                            deviceName: view.deviceName, daemonVersion: NimbusVersion.string,
                            startedAtNs: setup.startedAt.nanoseconds, clients: clients, errors: view.errorCount,
                            versionsCount: status.versionsCount, versionsBytes: status.versionsBytes,
                            placeholderStyle: setup.placeholderStyle?.wireName, placeholderStyleReason: setup.placeholderStyle?.reason,
                            cloudFilesystem: status.cloudCapabilities.map { Self.describe($0, status.cloudWriteProtocol) },
                            keptDeletes: status.heldDeletes > 0 && status.keptDeletes > 0 ? status.keptDeletes : nil,
                            journalError: status.journalError)
    }

    static func describe(_ c: FilesystemCapabilities, _ p: WriteProtocol) -> CloudFilesystem {
        CloudFilesystem(type: c.type, network: c.isNetwork, renameNoReplace: c.renameNoReplace,
                        renameExchange: c.renameExchange, hardLinks: c.hardLinks, xattrs: c.extendedAttributes,
                        mtimePrecisionNs: c.mtimePrecision.nanosecondCount, replace: p.replace.rawValue, create: p.create.rawValue,
                        verifiesContent: p.verifiesContent)
    }

    static func describe(_ phase: EnginePhase) -> (name: String, reason: String?) {
        switch phase {
        case .starting: ("starting", nil)
        case .idle: ("idle", nil)
        case .syncing: ("syncing", nil)
        case .paused: ("paused", nil)
        case .halted(let message): ("halted", message)
        }
    }

    // MARK: - Entries

    func list(_ request: ControlRequest) throws {
        let params = try params(ListParams.self, request) ?? ListParams()
        let client = request.client
        if let token = params.cursor {
            guard let listing = client.listing, listing.token == token else {
                throw RPCError(.notFound, "no listing for this cursor",
                               reason: "the cursor \"\(token)\" does not belong to the listing in progress on this connection",
                               suggestion: "start the listing again without a cursor")
            }
            let replier = try later(request)
            workers.run { Self.sendPage(listing.cursor, token: token, replier: replier) }
            return
        }
        let path = try resolvePath(params.path, params.pathBytes, field: "path", default: .root)
        if let state = params.state, !FileState.allNames.contains(state) {
            throw RPCError(.invalidParams, "invalid parameters for list", reason: "state: \"\(state)\" is not a state",
                           suggestion: "use one of \(FileState.allNames.joined(separator: ", "))")
        }
        let limit = params.limit ?? ListingCursor.defaultLimit
        guard (1...ListingCursor.maximumLimit).contains(limit) else {
            throw RPCError(.invalidParams, "invalid parameters for list", reason: "limit: \(limit) is not between 1 and \(ListingCursor.maximumLimit)",
                           suggestion: "give a limit from 1 to \(ListingCursor.maximumLimit), or none")
        }
        client.listingCounter += 1
        let token = "\(client.id).\(client.listingCounter)"
        let replier = try later(request)
        let view = self.view
        let recursive = params.recursive ?? false, state = params.state
        workers.run {
            do {
                let entries = try view.listEntries(under: path, recursive: recursive)
                    .filter { state == nil || $0.state.name == state }
                    .map(Self.wireEntry)
                Self.sendPage(ListingCursor(entries, limit: limit), token: token, replier: replier)
            } catch {
                replier.fail(Self.failure(error, path: path))
            }
        }
    }

    /// Answers with the next page of `cursor`, and keeps or forgets the listing on the
    /// connection depending on whether more follows.
    static func sendPage(_ cursor: ListingCursor, token: String, replier: ControlReplier) {
        let page = cursor.nextPage()
        let more = !cursor.isExhausted
        let line = replier.id.map { ListingCursor.line(id: $0, entries: page.json, nextCursor: more ? token : nil) }
        replier.deliver(line) { client in
            if more {
                client.listing = (token, cursor)
            } else if client.listing?.token == token {
                client.listing = nil
            }
        }
    }

    func stat(_ request: ControlRequest) throws {
        let params = try requiredParams(PathParams.self, request)
        let path = try resolvePath(params.path, params.pathBytes, field: "path")
        let replier = try later(request)
        let view = self.view
        workers.run {
            replier.answer {
                guard let entry = view.entry(path) else { throw Self.notFound(path) }
                return Self.wireEntry(entry)
            }
        }
    }

    static func wireEntry(_ info: EntryInfo) -> Entry {
        Entry(path: WirePath(info.path), kind: kindName(info.kind), size: info.size, mtimeNs: info.mtime, state: info.state,
              conflictCopy: info.state == .conflict ? info.conflictCopy.map(WirePath.init) : nil,
              residency: residencyName(info.residency))
    }

    static func kindName(_ kind: FileKind) -> String {
        switch kind {
        case .file: "file"
        case .directory: "directory"
        case .symlink: "symlink"
        case .special: "special"
        }
    }

    static func residencyName(_ residency: Residency) -> String {
        switch residency {
        case .auto: "auto"
        case .pinned: "pinned"
        case .evicted: "evicted"
        }
    }

    // MARK: - Conflicts, versions, locks

    func conflicts(_ request: ControlRequest) throws {
        let all = view.conflicts().map { ConflictInfo(path: WirePath($0.path), conflictCopy: WirePath($0.conflictCopy)) }
        let result = ConflictsResult(conflicts: all)
        guard let id = request.id, let line = encodeLine(Response(id: id, result: result)) else { return }
        guard line.count <= maximumLineLength + 1 else {
            throw RPCError(.failed, "too many conflicts for one answer", reason: "\(all.count) paths are in conflict",
                           suggestion: "list them page by page with list {\"recursive\": true, \"state\": \"conflict\"}")
        }
        server.send(request.client, line)
    }

    func versions(_ request: ControlRequest) throws {
        let params = try requiredParams(VersionsParams.self, request)
        let all = params.all ?? false
        let path = try resolvePath(params.path, params.pathBytes, field: "path", default: all ? .root : nil)
        let replier = try later(request)
        let view = self.view
        workers.run {
            replier.answer {
                let versions = all
                    ? try view.allVersions(under: path).map {
                        VersionInfo(id: $0.version.id, size: $0.version.metadata.size, mtimeNs: $0.version.metadata.mtime,
                                    path: WirePath($0.file))
                    }
                    : try view.versions(of: path).map { VersionInfo(id: $0.id, size: $0.metadata.size, mtimeNs: $0.metadata.mtime) }
                let result = VersionsResult(path: WirePath(path), versions: versions)
                // One answer is one line of at most 1 MiB: a huge store is listed folder by folder.
                if all, versions.count > 2_000, (try? JSONEncoder().encode(result).count) ?? 0 > maximumLineLength - 4096 {
                    throw RPCError(.failed, "too many versions for one answer", reason: "\(versions.count) versions are kept below \(path.isRoot ? "the folder" : path.description)",
                                   suggestion: "list them folder by folder: nimbusctl versions --all FOLDER")
                }
                return result
            }
        }
    }

    func locks(_ request: ControlRequest) {
        let owner = request.client.owner
        let locks = setup.leases.snapshot().map { info in
            LeaseInfo(lease: info.id.rawValue, path: WirePath(info.path), mode: info.mode.rawValue, state: info.state.rawValue,
                      owner: info.owner?.rawValue, mine: info.owner == owner)
        }
        answer(request, LocksResult(locks: locks))
    }
}
