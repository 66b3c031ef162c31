import NimbusProtocol

/// Sends the answer to one request from any thread, exactly once.
struct ControlReplier: Sendable {
    let server: ControlServer
    let clientID: UInt64
    let id: RequestID?

    func succeed<R: Codable & Sendable>(_ result: R, prepare: (@Sendable (ControlClientConnection) -> Void)? = nil) {
        deliver(id.flatMap { try? JSONRPC.line(Response(id: $0, result: result)) }, prepare: prepare)
    }

    func fail(_ error: RPCError) {
        deliver(id.flatMap { try? JSONRPC.line(ErrorResponse(id: $0, error: error)) }, prepare: nil)
    }

    /// Runs `body`; its result or thrown error is the answer.
    func answer<R: Codable & Sendable>(_ body: () throws -> R) {
        do {
            succeed(try body())
        } catch let error as RPCError {
            fail(error)
        } catch {
            fail(ControlHandler.failure(error))
        }
    }

    /// Sends a finished answer line (nil for a notification, which gets none).
    func deliver(_ line: [UInt8]?, prepare: (@Sendable (ControlClientConnection) -> Void)?) {
        let clientID = self.clientID
        server.post { server in server.deliverLater(to: clientID, line, prepare: prepare) }
    }
}
