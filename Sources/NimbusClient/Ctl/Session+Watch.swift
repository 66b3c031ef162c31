/// `nimbusctl watch`: events as they happen, until interrupted (Ctrl-C) or the daemon stops.
extension Session {
    func watch() async throws {
        let bar = ProgressLine(console: console, enabled: style.progressBars && !style.json, width: style.progressWidth)
        let stream = try await connection.watch(progress: style.json || style.progressBars)
        if !style.json {
            // Said on stderr, so that stdout holds only events.
            console.err(context.paint("Watching \(connection.daemon.localRoot); press Ctrl-C to stop.", .dim))
        }
        for await notification in stream {
            if style.json {
                console.out(notification.message.jsonText)
                continue
            }
            switch notification.payload {
            case .event(let event):
                if let line = Render.event(event, context) { bar.printAbove(line) }
            case .progress(let progress):
                let arrow = progress.direction == "upload" ? "↑" : "↓"
                bar.update(label: "\(arrow) \(progress.path)", fraction: progress.fraction, detail: "", force: progress.fraction >= 1)
                if progress.fraction >= 1 { bar.clear() }
            case .unknown:
                continue
            }
        }
        bar.clear()
        // The stream ends only when the connection does.
        throw NimbusClientError.connectionClosed(socketPath: connection.socketPath)
    }
}
