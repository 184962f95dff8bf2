import Foundation
import Glibc
import Synchronization

/// An exclusive lock on the state directory, held while alertd runs: a second
/// alertd on the same directory would serve a board the first one does not see.
final class StateLock: Sendable {
    private let fd: Int32
    private let released = Atomic<Bool>(false)

    /// Takes the lock on `directory/alertd.lock`, or throws naming the holder.
    init(directory: String) throws {
        // 0700 when new, whatever the umask: the store in it holds webhook secrets.
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = directory + "/alertd.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ConfigError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            let holder = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            close(fd)
            throw ConfigError("state directory \(directory) is in use by another alertd\(holder.isEmpty ? "" : " (pid \(holder))")")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        self.fd = fd
    }

    /// Releases the lock (closing the descriptor releases it too, at exit).
    func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        _ = flock(fd, LOCK_UN)
        close(fd)
    }
}
