import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport
import NimbusVocabulary

private func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }

/// What the executor does for each action, on the model (files only: the scenarios make no
/// folders or links).
extension PlaceholderModel {
    mutating func apply(_ action: Action) throws {
        switch action {
        case .rename(let from, let to, let side, let expected):
            try expect(side, from, expected)
            try move(side, from, to)
            rekey(from, to)
        case .preserveConflict(let path, let copyName, let side, let expected):
            try expect(side, path, expected)
            try move(side, path, copyName)
        case .remove(let path, let side, let expected):
            try expect(side, path, expected)
            if side == .cloud, let old = node(.cloud, path) { versions.insert("c\(old.content)") }
            set(side, path, nil)
            forget(path)
        case .copy(let path, let side, let source, let replacing):
            try expect(side.other, path, source)
            try expect(side, path, replacing)
            if side == .cloud, let old = node(.cloud, path) { versions.insert("c\(old.content)") }
            var copied = node(side.other, path)!
            copied.inode = inode()
            set(side, path, copied)
            base[path] = side == .cloud ? BaseEntry(local: source, cloud: copied.metadata) : BaseEntry(local: copied.metadata, cloud: source)
            placeholders.remove(path)
        case .setMode(let path, let side, let source, let expected):
            try expect(side, path, expected)
            var changed = node(side, path)!
            changed.mode = source.mode
            set(side, path, changed)
            base[path] = side == .cloud ? BaseEntry(local: source, cloud: changed.metadata) : BaseEntry(local: changed.metadata, cloud: source)
        case .record(let path, let l, let c, let hash):
            base[path] = BaseEntry(local: l, cloud: c, hash: hash)
        case .forget(let path):
            forget(path)
        case .rebase(let from, let to):
            rekey(from, to)
        case .makeDirectory, .removeDirectory, .makeSymlink, .convertPlaceholder, .evict:
            throw HarnessFailure("the scenarios have files only, but the plan has \(action)")
        case .writePlaceholder(let path, let source, let replacing):
            guard let file = style.file(for: path) else { return try apply(.copy(path, to: .local, source: source, replacing: nil)) }
            try expect(.cloud, path, source)
            try expect(.local, file, replacing)
            let placeholder = placeholderNode(for: path, cloud: source)
            set(.local, file, placeholder)
            base[path] = BaseEntry(local: placeholder.metadata, cloud: source)
            placeholders.insert(path)
        case .removePlaceholder(let path, let expected):
            guard let file = style.file(for: path) else { return }
            try expect(.local, file, expected)
            set(.local, file, nil)
            if placeholders.contains(path) { forget(path) }
        case .renamePlaceholder(let from, let to, let expected):
            guard let source = style.file(for: from), let destination = style.file(for: to) else { return }
            try expect(.local, source, expected)
            try move(.local, source, destination)
            rekey(from, to)
        case .movePlaceholder(let from, let to, let expected):
            try expect(.local, from, expected)
            try move(.local, from, to)
        case .retirePlaceholder(let file, let expected):
            try expect(.local, file, expected)
            if texts[expected.inode] != nil {
                set(.local, file, nil)
            } else {
                try move(.local, file, conflictName(for: style.target(of: file) ?? file))
            }
        case .repairPlaceholder(let path, let file, let edited, let cloudFile):
            try expect(.local, file, edited)
            let target = style.target(of: file) ?? path
            try move(.local, file, conflictName(for: target))
            let fresh = placeholderNode(for: target, cloud: cloudFile)
            set(.local, file, fresh)
            base[path]?.local = fresh.metadata
        case .adoptPlaceholder(let path, let placeholder, let cloudFile):
            guard let file = style.file(for: path) else { return }
            try expect(.local, file, placeholder)
            try expect(.cloud, path, cloudFile)
            base[path] = BaseEntry(local: placeholder, cloud: cloudFile)
            placeholders.insert(path)
        case .adoptLocalFile(let path, let here, let there):
            try expect(.local, path, here)
            try expect(.cloud, path, there)
            if let there, let l = node(.local, path), let c = node(.cloud, path), l.content == c.content {
                base[path] = BaseEntry(local: here, cloud: there, hash: ContentHash(value: UInt64(bitPattern: Int64(l.content)), size: Int64(l.content % 5)))
            }
            placeholders.remove(path)
        }
    }

    mutating func move(_ side: Side, _ from: RelativePath, _ to: RelativePath) throws {
        guard node(side, to) == nil, let moved = node(side, from) else { throw ChangedSincePlannedModel() }
        set(side, from, nil)
        set(side, to, moved)
    }

    mutating func rekey(_ from: RelativePath, _ to: RelativePath) {
        // The record moves whole, as the engine's index does: it replaces what `to` had.
        if let entry = base.removeValue(forKey: from) { base[to] = entry }
        if placeholders.remove(from) != nil { placeholders.insert(to) } else { placeholders.remove(to) }
    }

    mutating func forget(_ path: RelativePath) {
        base[path] = nil
        placeholders.remove(path)
    }

    func conflictName(for path: RelativePath) -> RelativePath {
        namer.name(for: path) { local.nodes[$0] != nil || cloud.nodes[$0] != nil }
    }
}

/// Scenarios and what must hold after them.
extension PlaceholderModel {
    static func check(seed: UInt64, style: PlaceholderStyle) throws {
        var m = PlaceholderModel(seed: seed, style: style)
        for _ in 0..<Int.random(in: 1...5, using: &m.random) { m.editCloud(kind: 3) }
        for _ in 0..<Int.random(in: 0...2, using: &m.random) { m.editLocal(kind: 4) }
        for name in names where Int.random(in: 0..<5, using: &m.random) == 0 { m.pinned.insert(rp(name)) }
        _ = try m.settle()
        try m.checkSettled("after the first sync")
        // Content both sides held in sync may be replaced by the sync of a change.
        let synced = Set(m.local.nodes.compactMap { path, node in
            node.content > 0 && m.cloud.nodes[path]?.content == node.content ? "c\(node.content)" : nil
        })
        for _ in 0..<Int.random(in: 1...4, using: &m.random) { m.editLocal(kind: Int.random(in: 0..<7, using: &m.random)) }
        for _ in 0..<Int.random(in: 0...3, using: &m.random) { m.editCloud(kind: Int.random(in: 0..<4, using: &m.random)) }
        let precious = m.contents.subtracting(synced)
        _ = try m.settle()
        let lost = precious.subtracting(m.contents.union(m.versions))
        guard lost.isEmpty else { throw HarnessFailure("content lost: \(lost.sorted())") }
        try m.checkSettled("after the edits")
    }

    /// Content (never a placeholder's text) on either side.
    var contents: Set<String> {
        Set((Array(local.nodes.values) + Array(cloud.nodes.values)).filter { $0.content > 0 }.map { "c\($0.content)" })
    }

    func isPlaceholder(_ node: Node) -> Bool { node.content < 0 }

    func freeName(_ taken: (RelativePath) -> Bool, _ random: inout SeededRandom) -> RelativePath? {
        let name = rp(Self.names.randomElement(using: &random)!)
        return taken(name) ? nil : name
    }

    mutating func editLocal(kind: Int) {
        let files = local.nodes.keys.sorted()
        let placeholderFiles = files.filter { isPlaceholder(local.nodes[$0]!) }
        switch kind {
        case 0:
            if let p = files.randomElement(using: &random) { local.nodes[p] = nil }
        case 1:
            // A placeholder renamed as a placeholder (keeping `.nimbus`).
            if let p = placeholderFiles.randomElement(using: &random), let q = freeName({ local.nodes[$0] != nil }, &random),
               let file = style.file(for: q), local.nodes[file] == nil {
                local.nodes[file] = local.nodes.removeValue(forKey: p)
            }
        case 2:
            // A tracked placeholder renamed without its suffix (an untracked one renamed so is
            // just the user's text file, uploaded as such).
            let tracked = placeholderFiles.filter { file in
                base.contains { placeholders.contains($0.key) && $0.value.local.inode == local.nodes[file]!.inode }
            }
            if let p = tracked.randomElement(using: &random), let q = freeName({ local.nodes[$0] != nil }, &random) {
                local.nodes[q] = local.nodes.removeValue(forKey: p)
            }
        case 3:
            // Written into.
            if let p = placeholderFiles.randomElement(using: &random) {
                texts[local.nodes[p]!.inode] = nil
                local.nodes[p]!.content = content()
                local.nodes[p]!.mtime = tick()
            }
        case 4:
            if let q = freeName({ local.nodes[$0] != nil }, &random) {
                local.nodes[q] = Node(kind: .file, content: content(), inode: inode(), mtime: tick())
            }
        case 5:
            if let p = files.filter({ !isPlaceholder(local.nodes[$0]!) }).randomElement(using: &random) {
                local.nodes[p]!.content = content()
                local.nodes[p]!.mtime = tick()
            }
        default:
            // A stray: a placeholder copied from elsewhere, that nothing tracks.
            if let t = cloud.nodes.keys.sorted().randomElement(using: &random), !placeholders.contains(t),
               let file = style.file(for: t), local.nodes[file] == nil, local.nodes[t] == nil {
                local.nodes[file] = placeholderNode(for: t, cloud: cloud.nodes[t]!.metadata)
            }
        }
    }

    mutating func editCloud(kind: Int) {
        let files = cloud.nodes.keys.sorted()
        switch kind {
        case 0:
            if let p = files.randomElement(using: &random) {
                cloud.nodes[p]!.content = content()
                cloud.nodes[p]!.mtime = tick()
            }
        case 1:
            if let p = files.randomElement(using: &random) { cloud.nodes[p] = nil }
        case 2:
            if let p = files.randomElement(using: &random), let q = freeName({ cloud.nodes[$0] != nil }, &random) {
                cloud.nodes[q] = cloud.nodes.removeValue(forKey: p)
            }
        default:
            if let q = freeName({ cloud.nodes[$0] != nil }, &random) {
                cloud.nodes[q] = Node(kind: .file, content: content(), inode: inode(), mtime: tick())
            }
        }
    }

    /// Every local file is in the cloud, every placeholder stands for a cloud file of its
    /// size, and every cloud file is here or stood for.
    func checkSettled(_ label: String) throws {
        var stoodFor = Set<RelativePath>()
        for (path, node) in local.nodes {
            if isPlaceholder(node) {
                guard let target = style.target(of: path), placeholders.contains(target), let there = cloud.nodes[target],
                      let info = texts[node.inode].flatMap(Placeholder.parse), info.size == there.metadata.size else {
                    throw HarnessFailure("\(label): the placeholder \(path) stands for no cloud file; local \(local.nodes.keys.sorted()), cloud \(cloud.nodes.keys.sorted())")
                }
                stoodFor.insert(target)
            } else if cloud.nodes[path]?.content != node.content {
                throw HarnessFailure("\(label): \(path) differs: local c\(node.content), cloud \(cloud.nodes[path].map { "c\($0.content)" } ?? "none")")
            }
        }
        for path in cloud.nodes.keys where local.nodes[path] == nil && !stoodFor.contains(path) {
            throw HarnessFailure("\(label): the cloud file \(path) is neither here nor stood for by a placeholder; local \(local.nodes.keys.sorted())")
        }
    }
}
