import Dispatch

extension DispatchGroup {
    /// Returns once every member left, without holding a thread meanwhile.
    func finished() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in notify(queue: .global()) { done.resume() } }
    }
}
