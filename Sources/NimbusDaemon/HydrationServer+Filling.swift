import Dispatch
import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// One open of a not-downloaded file, from the kernel's event to the reader's answer: held
/// until the placeholders are known, joined to a fill already running, refused, or filled.
extension HydrationServer {
    func handle(_ event: FanotifyEvent) {
        guard event.needsResponse else {
            if event.events.contains(.queueOverflow) { log.warning("real-name placeholders: the kernel's event queue overflowed") }
            if event.file.rawValue >= 0 { try? event.file.close() }
            return
        }
        guard let current = try? event.file.metadata() else { return answer(event, .deny(.ioError)) }
        let identity = FileIdentity(device: current.device, inode: current.inode)
        guard let placeholder = placeholders.withLock({ $0[identity] }) else {
            // The daemon's own reads (the start-up check of a fill cut short) never wait for
            // itself: they see what the file holds.
            if event.pid == ProcessSupport.processID { return answer(event, .allow) }
            let held = heldUntilKnown.withLock { held -> Bool in
                guard held != nil else { return false }
                held!.append(event)
                return true
            }
            if held { return }
            // Not (or no longer) a placeholder: a mark left behind.
            try? group.unmark(file: event.file)
            return answer(event, .allow)
        }
        if RealNamePlaceholderFile.decide(notDownloaded: true, currentSize: current.size,
                                          expectedSize: placeholder.cloud.size) == .leave {
            forget(device: current.device, inode: current.inode)
            try? group.unmark(file: event.file)
            // Told before the reader is answered, as a fill's outcome is: once the reader has
            // its answer, the engine has heard (a test that read and then looked for the
            // outcome missed it under load when the answer went first).
            completed(.changedLocally(placeholder))
            return answer(event, .allow)
        }
        // Joins a fill already running for this file.
        let waiter = Waiter(event: event, since: now())
        let joined = inFlight.withLock { running in
            guard running[identity] != nil else { return false }
            running[identity]!.append(waiter)
            return true
        }
        if joined { return }
        if let refusal = refusal(of: event, placeholder) { return answer(event, .deny(refusal)) }
        if let short = shortOfSpace(event.file, placeholder) {
            let message = "not enough space to download \(placeholder.path): \(short). Free some space, evict files "
                + "(nimbusctl evict), or download it with nimbusctl download"
            log.warning("\(message); the program that opened it gets ENOSPC")
            completed(.failed(placeholder, .noSpace, message))  // Its state says so, as the suffix style's does.
            return answer(event, .deny(.noSpace))
        }
        inFlight.withLock { $0[identity] = [waiter] }
        startFill(event.file, placeholder, identity: identity)
    }

    /// Fills through a descriptor of its own (a duplicate of a reader's event's), so that a
    /// reader answered early (timeout) does not take the fill's descriptor with it.
    func startFill(_ eventFile: FileDescriptor, _ placeholder: Placeholder, identity: FileIdentity) {
        let file: FileDescriptor
        do {
            file = try eventFile.duplicate()
        } catch {
            log.warning("cannot fetch \(placeholder.path) for the program that opened it: \(error)")
            let waiting = inFlight.withLock { $0.removeValue(forKey: identity) ?? [] }
            for waiter in waiting { answer(waiter.event, .deny(.ioError)) }
            return
        }
        fillers.enter()
        DispatchQueue.global().async { [self] in
            defer { fillers.leave() }
            defer { try? file.close() }
            fill(file, placeholder, identity: identity)
        }
    }

    private func fill(_ file: FileDescriptor, _ placeholder: Placeholder, identity: FileIdentity) {
        let outcome: Outcome
        do {
            let cloud: FileDescriptor
            do {
                if let cloudRoot {
                    cloud = try FileDescriptor.open(beneath: cloudRoot, placeholder.path, [.noFollow, .nonBlocking])
                } else {
                    let root = try FileDescriptor.open(cloudRootPath!, [.directory])
                    cloud = try root.closeAfter { try FileDescriptor.open(beneath: root, placeholder.path, [.noFollow, .nonBlocking]) }
                }
            } catch let error as Errno {
                throw error.at("open the cloud's", placeholder.path)
            }
            try cloud.closeAfter {
                try RealNamePlaceholderFile.fill(file, from: cloud, expected: placeholder.cloud, path: placeholder.path,
                                                 state: (NimbusCore.Placeholder.stateAttribute, Array("downloaded".utf8))) {
                    // A stop gives the fill up at its next chunk: the reader gets EIO, the
                    // file is punched back to a placeholder, and the stop waits for no more.
                    if stopping.load(ordering: .acquiring) { throw CancellationError() }
                    progress(placeholder.path, $0, placeholder.cloud.size)
                }
            }
            outcome = .filled(placeholder, local: try file.metadata())
        } catch is CancellationError {
            outcome = .failed(placeholder, .ioError, "nimbusd is stopping; it fetches the file when it runs again and it is opened")
        } catch {
            outcome = .failed(placeholder, Self.errno(for: error), "\(error)")
        }
        let response: FanotifyResponse
        switch outcome {
        case .filled:
            forget(device: identity.device, inode: identity.inode)
            try? group.unmark(file: file)
            response = .allow
        case .failed(_, let errno, let message):
            log.warning("cannot fetch \(placeholder.path) for the program that opened it: \(message)")
            response = .deny(errno)
        case .changedLocally:
            response = .allow
        }
        completed(outcome)
        slowLogged.withLock { _ = $0.remove(identity) }
        let waiting = inFlight.withLock { $0.removeValue(forKey: identity) ?? [] }
        for waiter in waiting { answer(waiter.event, response) }
    }

    func answer(_ event: FanotifyEvent, _ response: FanotifyResponse) {
        do {
            try group.respond(to: event, response)
        } catch {
            log.error("real-name placeholders: cannot answer the kernel: \(error)")
        }
        try? event.file.close()
    }

    /// The errno a reader gets when the fill failed: the disk's own for a full disk, EIO else.
    static func errno(for error: any Error) -> Errno {
        let found = Errno(of: error)
        if let found, found.isOutOfSpace { return found }
        return .ioError
    }
}
