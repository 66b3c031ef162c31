import NimbusCore
/// "Did you mean …?" for mistyped commands, options and values.
enum Spelling {
    /// The candidate closest to `input` by edit distance (a swap of two neighbours counts as
    /// one edit), when close enough to be a plausible typo; ties go to the earlier candidate.
    /// Dashes are ignored when measuring, so `--recusive` and `recursive` both find
    /// `--recursive`.
    static func closest(to input: String, among candidates: [String]) -> String? {
        let typed = Array(bare(input))
        guard !typed.isEmpty else { return nil }
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let target = Array(bare(candidate))
            let distance = editDistance(typed, target)
            // Short words tolerate one slip, long ones up to three; a one-letter name is
            // never a guess (`-x` is not a typo of `-h`).
            let allowed = max(1, min(3, target.count / 3))
            if distance <= allowed, distance < target.count, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        if let best { return best.candidate }
        // An unambiguous prefix of three letters or more: `conf` → `confirm-deletes`.
        let prefixed = candidates.filter { typed.count >= 3 && bare($0).hasPrefix(String(typed)) }
        return prefixed.count == 1 ? prefixed[0] : nil
    }

    static func bare(_ word: String) -> String {
        String(word.drop { $0 == "-" }).lowercased()
    }
}
