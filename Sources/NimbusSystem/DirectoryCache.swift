import Glibc
import NimbusVocabulary
import Synchronization

/// Directory descriptors kept open for a batch of operations (issue 15).
///
/// Every operation on a path opens its parent directory beneath the root (`withParent`), so a
/// copy of one file opened the same directory five times (the temporary's, the destination's,
/// the checks after, the state xattr). Inside `keepingDirectoriesOpen`, the thread that called
/// it gets each directory opened once and reuses the descriptor, which names the directory
/// itself, not its path: everything done through it is still beneath the root, still refuses
/// symlinks, and every check of an entry (`fstatat` before a replace) still asks the kernel.
///
/// What a kept descriptor cannot see is its directory being renamed or removed meanwhile. So:
/// - our own renames, removals and creations of directories (`forget`) drop every kept one;
/// - a kept descriptor is used for at most `maximumAge`, then the path is resolved again, so a
///   folder the user moves during a long batch is followed for at most that long (as a
///   descriptor opened just before the move would be), and files never go on landing in it;
/// - at most `capacity` are kept, so a tree of many folders cannot exhaust the descriptors;
/// - a root directory opened again (`RootDirectory.check`) drops them all.
/// Other threads never see the cache: it belongs to the thread that opened the scope.
public enum DirectoryCache {
    static let capacity = 64
    static let maximumAge: Duration = .seconds(1)

    /// Runs `body` with directory descriptors kept open on this thread, closing them at the end.
    public static func keepingDirectoriesOpen<R>(_ body: () throws -> R) rethrows -> R {
        if current != nil { return try body() }  // Already kept by an outer scope.
        let scope = Scope()
        pthread_setspecific(key, Unmanaged.passUnretained(scope).toOpaque())
        defer {
            pthread_setspecific(key, nil)
            scope.closeAll()
        }
        return try withExtendedLifetime(scope) { try body() }
    }

    /// Drops the kept descriptors of this thread (a directory was renamed, removed or made).
    static func forget() { current?.retireAll() }

    /// The scope of this thread, if it keeps directories open.
    static var current: Scope? {
        pthread_getspecific(key).map { Unmanaged<Scope>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// Bumped whenever a root directory is opened again: a kept descriptor of the old root's
    /// tree must not serve the new one, even if the root's descriptor number comes back.
    static let rootGeneration = Atomic<Int>(0)

    /// The kept descriptors of one thread. Only that thread touches it.
    final class Scope {
        private struct Key: Hashable {
            var root: Int32
            var path: RelativePath
        }

        private var kept: [Key: (descriptor: FileDescriptor, openedAt: MonotonicInstant)] = [:]
        /// Dropped descriptors that may still be in use by an enclosing `withParent`: closed
        /// once none is running (`depth` 0).
        private var retired: [FileDescriptor] = []
        private var depth = 0
        private var generation = DirectoryCache.rootGeneration.load(ordering: .relaxed)

        /// Runs `body` with the directory `path` beneath `root`, opened `O_PATH` as
        /// `withParent` opens it, kept for the next operations.
        func withDirectory<R>(_ path: RelativePath, beneath root: FileDescriptor,
                              _ body: (FileDescriptor) throws -> R) throws -> R {
            let now = Self.monotonicNow()
            let generationNow = DirectoryCache.rootGeneration.load(ordering: .relaxed)
            if generationNow != generation {
                retireAll()
                generation = generationNow
            }
            let key = Key(root: root.rawValue, path: path)
            let directory: FileDescriptor
            if let entry = kept[key], now - entry.openedAt < DirectoryCache.maximumAge {
                directory = entry.descriptor
            } else {
                if let old = kept.removeValue(forKey: key) { retired.append(old.descriptor) }
                if kept.count >= DirectoryCache.capacity { retireAll() }
                directory = try FileDescriptor.open(beneath: root, path, [.pathOnly, .directory])
                kept[key] = (directory, now)
            }
            depth += 1
            defer {
                depth -= 1
                if depth == 0 { closeRetired() }
            }
            return try body(directory)
        }

        /// How many descriptors are kept now (for tests).
        var keptCount: Int { kept.count }

        func retireAll() {
            retired += kept.values.map(\.descriptor)
            kept.removeAll(keepingCapacity: true)
            if depth == 0 { closeRetired() }
        }

        func closeAll() {
            retireAll()
            closeRetired()
        }

        private func closeRetired() {
            for descriptor in retired { try? descriptor.close() }
            retired.removeAll(keepingCapacity: true)
        }

        /// CLOCK_MONOTONIC_COARSE: read without a system call, ample for a one-second limit.
        private static func monotonicNow() -> MonotonicInstant {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
            return MonotonicInstant(nanoseconds: now.nanoseconds)
        }
    }
}
