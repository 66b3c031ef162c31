import NimbusCore
import NimbusProtocol
import NimbusSystem

/// download, evict, pin, unpin (DESIGN §5). Each answers with the path's entry afterwards.
extension ControlHandler {
    func download(_ request: ControlRequest) throws {
        let params = try requiredParams(DownloadParams.self, request)
        let path = try resolvePath(params.path, params.pathBytes, field: "path")
        let replier = try later(request)
        let view = self.view, residency = self.residency
        guard params.wait ?? true else {
            // Answer with the entry as it is now; the download goes on.
            residency.download(path, .explicit) { _ in }
            return replier.answer {
                guard let entry = view.entry(path) ?? (try? residency.residentPath(path)).flatMap(view.entry) else {
                    throw Self.notFound(path)
                }
                return Self.wireEntry(entry)
            }
        }
        residency.download(path, .explicit) { result in
            replier.answer {
                do {
                    guard let entry = try result.get() else { throw Self.notFound(path) }
                    return Self.wireEntry(entry)
                } catch {
                    throw Self.failure(error, path: path)
                }
            }
        }
    }

    func residency(_ request: ControlRequest) throws {
        let params = try requiredParams(PathParams.self, request)
        let path = try resolvePath(params.path, params.pathBytes, field: "path")
        let residency = self.residency
        let method = request.method
        try onEngine(request) {
            let entry: EntryInfo?
            do {
                switch method {
                case .evict: entry = try residency.evict(path)
                case .pin: entry = try residency.pin(path)
                default: entry = try residency.unpin(path)
                }
            } catch {
                throw Self.failure(error, path: path)
            }
            guard let entry else { throw Self.notFound(path) }
            return Self.wireEntry(entry)
        }
    }
}
