import AlertdCore
import AlertdInProcess
import AlertdSQLite

/// alertd in process (``withInProcessAlertd(config:store:clock:stateDir:wrapStore:_:)``) on
/// a manual clock, as this target's tests run it: time moves only when a test moves it.
func withAlertd<T>(
    config: String = "", stateDir: String? = nil, wrapStore: (@Sendable (any PersistentStore) -> any PersistentStore)? = nil,
    _ body: (InProcessAlertd) async throws -> T
) async throws -> T {
    try await withInProcessAlertd(config: config, clock: ManualClock(), stateDir: stateDir, wrapStore: wrapStore, body)
}
