import FoundationEssentials
import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

extension ControlHandler {
    // MARK: - Work on the engine thread

    /// Runs `body` on the engine thread between sync passes and answers with its result, once
    /// it is done. Refused while paused (these commands copy files) or halted.
    func onEngine<R: Codable & Sendable>(_ request: ControlRequest, _ body: @escaping @Sendable () throws -> R) throws {
        let replier = try later(request)
        let view = self.view
        commands.perform {
            replier.answer {
                try Self.checkRunnable(view)
                return try body()
            }
        }
    }

    /// On the engine thread: may the engine copy now?
    static func checkRunnable(_ view: any PairView) throws {
        if view.isPaused {
            throw RPCError(.paused, "sync is paused", reason: "this would copy files, and sync is paused",
                           suggestion: "run 'nimbusctl resume' first")
        }
        if case .halted(let message) = view.status.phase {
            throw RPCError(.daemonHalted, "sync is halted", reason: message,
                           suggestion: "mount or restore the missing folder; sync resumes by itself")
        }
    }

    func resolve(_ request: ControlRequest) throws {
        let params = try requiredParams(ResolveParams.self, request)
        let path = try resolvePath(params.path, params.pathBytes, field: "path")
        guard let choice = ConflictChoice(rawValue: params.keep) else {
            throw RPCError(.invalidParams, "invalid parameters for resolve", reason: "keep: \"\(params.keep)\" is not local, cloud or both",
                           suggestion: "keep local (this device's version), cloud (the cloud's version) or both")
        }
        let commands = self.commands
        try onEngine(request) {
            do {
                try commands.resolve(path, keep: choice)
            } catch {
                throw Self.failure(error, path: path)
            }
            return ResolveResult(path: WirePath(path), kept: choice.rawValue)
        }
    }

    func restore(_ request: ControlRequest) throws {
        let params = try requiredParams(RestoreParams.self, request)
        let path = try resolvePath(params.path, params.pathBytes, field: "path")
        let target = params.to == nil && params.toBytes == nil ? nil : try resolvePath(params.to, params.toBytes, field: "to")
        let view = self.view, commands = self.commands
        let dryRun = params.dryRun ?? false
        let body: @Sendable () throws -> RestoreResult = {
            do {
                let items = try view.restorePlan(path, versionID: params.version, at: params.atNs.map(WallInstant.init(nanoseconds:)), to: target)
                if !dryRun { try commands.restore(items) }
                let files = items.map {
                    RestoredFile(path: WirePath($0.file), version: $0.version.id, size: $0.version.metadata.size,
                                 restoredTo: WirePath($0.destination))
                }
                let single = items.count == 1 && items[0].file == path ? items[0] : nil
                return RestoreResult(path: WirePath(path), version: single?.version.id ?? "", restoredTo: WirePath(target ?? path),
                                     files: files, dryRun: dryRun)
            } catch {
                throw Self.failure(error, path: path)
            }
        }
        guard dryRun else { return try onEngine(request, body) }
        // A dry run changes nothing: it may run while paused or halted.
        let replier = try later(request)
        commands.perform { replier.answer(body) }
    }

    func prune(_ request: ControlRequest) throws {
        let view = self.view, commands = self.commands
        let replier = try later(request)
        commands.perform {
            replier.answer {
                guard let outcome = commands.pruneVersions() else {
                    throw RPCError(.failed, "the versions store was not pruned", reason: "it could not be read (see the daemon's log)",
                                   suggestion: "check that the cloud folder is there and readable, then try again")
                }
                let status = view.status
                return PruneResult(removed: outcome.removed, removedBytes: outcome.removedBytes,
                                   versionsCount: status.versionsCount, versionsBytes: status.versionsBytes)
            }
        }
    }

    func pause(_ request: ControlRequest, _ paused: Bool) throws {
        let view = self.view
        let replier = try later(request)
        commands.setPaused(paused)
        // The runtime's inbox is served in order: this runs once the pause took effect.
        commands.perform { replier.succeed(PauseResult(paused: view.isPaused)) }
        server.log.notice(paused ? "paused by \(request.client.description)" : "resumed by \(request.client.description)")
    }

    func rescan(_ request: ControlRequest) throws {
        let view = self.view, commands = self.commands
        try onEngine(request) {
            commands.sync(nil)
            try Self.checkRunnable(view)
            return RescanResult(tracked: view.status.tracked)
        }
    }

    func decideDeletes(_ request: ControlRequest, confirm: Bool) throws {
        let commands = self.commands
        try onEngine(request) {
            DeletesResult(count: confirm ? commands.confirmDeletes() : commands.revertDeletes())
        }
    }

    func watch(_ request: ControlRequest) throws {
        let params = try params(WatchParams.self, request) ?? WatchParams()
        server.startWatching(request.client, progress: params.progress ?? true)
        answer(request, WatchResult(watching: true))
    }

    func reload(_ request: ControlRequest) throws {
        guard let reload = setup.reload else {
            throw RPCError(.notSupported, "reload is not available", reason: "this daemon was started without a configuration to reload",
                           suggestion: "restart the daemon to apply new settings")
        }
        let replier = try later(request)
        workers.run {
            replier.answer {
                do { return try reload() } catch let error as RPCError { throw error } catch {
                    throw RPCError(.failed, "the configuration was not reloaded", reason: "\(error)",
                                   suggestion: "fix the configuration and reload again; the old settings stay in effect")
                }
            }
        }
    }

    // MARK: - Leases

    func acquire(_ request: ControlRequest) throws {
        let params = try requiredParams(AcquireParams.self, request)
        let path = try resolvePath(params.path, params.pathBytes, field: "path")
        guard let mode = LockMode(rawValue: params.mode) else {
            throw RPCError(.invalidParams, "invalid parameters for acquire", reason: "mode: \"\(params.mode)\" is not shared or exclusive",
                           suggestion: "use shared to read, exclusive to write")
        }
        var timeout: Duration?
        if let seconds = params.timeoutSeconds {
            guard seconds.isFinite, (0...31_536_000).contains(seconds) else {
                throw RPCError(.invalidParams, "invalid parameters for acquire", reason: "timeoutSeconds: \(seconds) is not between 0 and one year",
                               suggestion: "give a number of seconds, 0 for no waiting, or leave it out to wait as long as needed")
            }
            timeout = .seconds(seconds)
        }
        let replier = try later(request)
        // A reader of a placeholder wants the content: download it first (DESIGN §5, issue #8).
        if mode == .shared, let target = try? residency.residentPath(path),
           residency.isPlaceholder(target) {
            let leases = setup.leases
            let owner = request.client.owner
            let timeout = timeout
            residency.download(target, .explicit) { result in
                if case .failure(let error) = result { return replier.fail(Self.failure(error, path: target)) }
                // On the server thread, where a connection that closed meanwhile is known gone:
                // a lease must never outlive its connection.
                replier.server.post { server in
                    guard server.clientsByID[replier.clientID] != nil else { return }
                    ControlHandler.grant(target, mode: mode, owner: owner, timeout: timeout, leases: leases, replier: replier)
                }
            }
            return
        }
        Self.grant(path, mode: mode, owner: request.client.owner, timeout: timeout, leases: setup.leases, replier: replier)
    }

    static func grant(_ path: RelativePath, mode: LockMode, owner: OwnerID, timeout: Duration?, leases: any LeaseProvider,
                      replier: ControlReplier) {
        leases.acquire(path, mode: mode, owner: owner, timeout: timeout) { result in
            switch result {
            case .success(let lease):
                replier.succeed(AcquireResult(lease: lease.rawValue, path: WirePath(path), mode: mode.rawValue))
            case .failure(.busy(let holders)):
                let who = holders.map { "lease \($0.id.rawValue) (\($0.mode.rawValue), \($0.path.isRoot ? "the whole folder" : $0.path.description))" }
                replier.fail(RPCError(.busy, "\(path.isRoot ? "the folder" : path.description) is locked",
                                      reason: who.isEmpty ? "earlier requests are waiting for it" : "held by " + who.joined(separator: ", "),
                                      suggestion: "try again later, or wait longer with a bigger timeoutSeconds"))
            case .failure(.withdrawn):
                replier.fail(RPCError(.failed, "the lease request was withdrawn", reason: "the connection closed",
                                      suggestion: "keep the connection open while you wait"))
            }
        }
    }

    func release(_ request: ControlRequest) throws {
        let params = try requiredParams(ReleaseParams.self, request)
        let lease = LockID(rawValue: params.lease)
        let released = setup.leases.snapshot().first { $0.id == lease && $0.owner == request.client.owner }
        guard setup.leases.release(lease, owner: request.client.owner), let released else {
            throw RPCError(.notFound, "no lease \(params.lease) on this connection",
                           reason: "this connection does not hold lease \(params.lease) (released already, or another connection's)",
                           suggestion: "see the leases with 'locks'; a lease can only be released by the connection that acquired it")
        }
        syncAfterWriting([released])
        answer(request, ReleaseResult(released: params.lease))
    }

    /// Releases every lease of a connection that closed, however it closed.
    func releaseLeases(of owner: OwnerID) {
        let held = setup.leases.snapshot().filter { $0.owner == owner }
        // Always: an acquisition still starting is not in the snapshot yet, and must learn
        // that its connection is gone.
        setup.leases.releaseAll(owner: owner)
        syncAfterWriting(held)
    }

    /// What an application wrote under an exclusive lease is synced right after its release
    /// (issue #8), not at the next rescan.
    private func syncAfterWriting(_ leases: [LockInfo]) {
        let paths = leases.filter { $0.mode == .exclusive && $0.state == .granted }.map(\.path)
        if !paths.isEmpty { commands.syncSoon(paths) }
    }
}
