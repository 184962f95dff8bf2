import Foundation

/// Runs blocking work (a semaphore wait, a thread join, a blocking socket read) on a thread
/// of its own and awaits its result, so that a test never holds one of the cooperative
/// pool's threads (two on a two-core machine) while it blocks.
///
/// ```swift
/// let stopped = await onOwnThread { server.stop(grace: 10) }
/// ```
public func onOwnThread<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        Thread {
            do throws(E) {
                continuation.resume(returning: .success(try work()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }.start()
    }
    return try result.get()
}
