/// The two roots of a pair.
public enum Side: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case local, cloud

    public var other: Side { self == .local ? .cloud : .local }
    public var description: String { rawValue }
}
