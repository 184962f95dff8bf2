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
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ConfigError(Self.cannotCreate(directory, error), key: "state_dir")
        }
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

    /// alertd's sentence for a state directory it could not create, with the system's
    /// reason (Foundation's own text is `NSCocoaErrorDomain Code=4 …`).
    static func cannotCreate(_ directory: String, _ error: any Error) -> String {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey]
        let code: Int32? =
            if let posix = underlying as? POSIXError {
                posix.code.rawValue
            } else if let ns = underlying as? NSError,
                ns.domain == NSPOSIXErrorDomain
            { Int32(ns.code) } else { nil }
        let reason = code.map { String(cString: strerror($0)) } ?? "\(error.localizedDescription)"
        return "state_dir \(directory) cannot be created: \(reason) (alertd runs as uid \(getuid())); "
            + "create it, or point state_dir (or --state-dir) at a directory this user may write"
    }

    /// Releases the lock (closing the descriptor releases it too, at exit).
    func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        _ = flock(fd, LOCK_UN)
        close(fd)
    }
}
