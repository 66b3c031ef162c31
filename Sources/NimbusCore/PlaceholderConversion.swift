import NimbusVocabulary

/// Why a placeholder keeps its style in a conversion at start (the sync passes settle it
/// later, `foldPlaceholdersOfTheOtherStyle`, or a later start converts it).
public enum ConversionBlock: Hashable, Sendable, CustomStringConvertible {
    /// The new style's name for it is another file's (`x.nimbus` a file of the user's, or a
    /// real file beside a suffix placeholder).
    case nameTaken(RelativePath)
    /// The new style has no name for it (`.nimbus` would make the name too long).
    case noName
    /// The placeholder file is missing or changed since the journal recorded it: the next
    /// sync pass decides what it is first.
    case changed

    public var description: String {
        switch self {
        case .nameTaken(let name): "\(name) is another file, which is kept; the next sync pass settles it"
        case .noName: "the other style has no name for it (too long)"
        case .changed: "it changed since it was synced; the next sync pass decides what it is"
        }
    }
}

/// What converting the placeholders of a pair from one style to another takes.
public struct PlaceholderConversion: Hashable, Sendable {
    /// `convertPlaceholder` actions, in an order where each new name is free when written.
    public var actions: [Action] = []
    public var blocked: [RelativePath: ConversionBlock] = [:]
}

/// Plans the conversion of every placeholder of style `from` into style `to` (DESIGN §5,
/// switching a pair between styles): no download, nothing removed before its replacement is
/// written, no name taken from another file. Names freed by one conversion are used by the
/// next (a cloud file `x.nimbus` next to `x`: in the suffix style `x`'s placeholder holds
/// `x.nimbus`, in the real-name style `x.nimbus`'s own placeholder does), so conversions are
/// ordered, and those whose name never frees up are `blocked`.
///
/// - `records`: the journal's placeholders (path → record with `isPlaceholder`).
/// - `local`: the local scan as it is (placeholder files under their own names).
public func planPlaceholderConversion(from: PlaceholderStyle, to: PlaceholderStyle, records: [RelativePath: PlaceholderRecord],
                                      local: [RelativePath: FileMetadata]) -> PlaceholderConversion {
    var conversion = PlaceholderConversion()
    guard from != to else { return conversion }
    var occupied = Set(local.keys)
    var pending: [(path: RelativePath, old: RelativePath, new: RelativePath, record: PlaceholderRecord)] = []
    for (path, record) in records.sorted(by: { $0.key < $1.key }) where record.isPlaceholder {
        guard let old = from.file(for: path), let current = local[old], current.isUnchanged(from: record.base.local) else {
            conversion.blocked[path] = .changed
            continue
        }
        guard let new = to.file(for: path) else {
            conversion.blocked[path] = .noName
            continue
        }
        pending.append((path, old, new, record))
    }
    // Each round converts what has a free name; a conversion frees its old name for the next.
    while !pending.isEmpty {
        var waiting: [(path: RelativePath, old: RelativePath, new: RelativePath, record: PlaceholderRecord)] = []
        for item in pending {
            if occupied.contains(item.new) && item.new != item.old {
                waiting.append(item)
                continue
            }
            conversion.actions.append(.convertPlaceholder(item.path, to: to, expected: item.record.base.local, cloud: item.record.base.cloud))
            occupied.remove(item.old)
            occupied.insert(item.new)
        }
        if waiting.count == pending.count {
            for item in waiting { conversion.blocked[item.path] = .nameTaken(item.new) }
            break
        }
        pending = waiting
    }
    return conversion
}
