import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdWire

/// One request on its way through a handler: what was captured and who asks,
/// and the one way to answer it.
struct Call: Sendable {
    let request: HTTPRequest
    let captures: Captures
    let principal: Principal?
    let requestID: String
    let responder: Responder
    let finish: @Sendable (HTTPResponse) -> HTTPResponse
    /// The token's place among its requests in flight, if counted.
    var slot: TokenConcurrency.Slot? = nil

    /// A long-poll is about to park: it leaves its token's requests in flight
    /// (`limits.max_waiters_per_token` bounds parked ones).
    func parking() { slot?.release() }

    /// Whether an alert's `callback_url` is shown whole: to `admin` and `post` tokens,
    /// and to everyone without tokens; redacted for `read`, `answer` and `alertmanager`
    /// (``Redaction``).
    var seesCallbackURLs: Bool {
        principal.map { $0.roles.contains(.admin) || $0.roles.contains(.post) } ?? true
    }

    /// The route's `{client}`, checked against the client id pattern.
    func client() throws(Problem) -> String {
        let client = captures["client"] ?? ""
        guard ClientID.isValid(client) else {
            // A space is the likeliest mistake ("my app"): say so rather than leave it to the pattern.
            let space = client.contains(" ") || client.lowercased().contains("%20")
            throw Problem(
                .badRequest,
                "client id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
                    + (space ? "; it has a space, which a client id may not: use - or _ (my-app)" : ""))
        }
        return client
    }

    /// The route's `{id}` as an alert id; any other text names no alert (404).
    func alertID(on client: String) throws(Problem) -> AlertID {
        let text = captures["id"] ?? ""
        guard let id = AlertID(text) else { throw Problem(.notFound, "no alert \(text) on client \(client)") }
        return id
    }

    /// The query, refusing any parameter not in `allowed`.
    func query(_ allowed: [String] = []) throws(Problem) -> Query { try Query(request, allowed: allowed) }

    /// Answers now.
    func respond(_ response: HTTPResponse) { responder.respond(finish(response)) }

    /// Answers with a response built when it is sent, on the connection's own
    /// thread: for answers handed to a callback that may run on the store writer's
    /// thread (a parked waiter woken by a deadline round's commit), which must not
    /// build them.
    func reply(_ make: @escaping @Sendable () -> HTTPResponse) {
        responder.respond(building: { [finish] in finish(make()) })
    }

    /// Answers with what the engine's async `work` gives, as `render` makes it: the one
    /// bridge between libmicrohttpd's callbacks and the engine. Work that suspends (a
    /// commit, a long-poll, the database) leaves the connection suspended, no thread
    /// held, and resumes it with the answer. The task prefers the connection's loop
    /// (``Responder/executor``), so it starts and ends on the connection's thread; the
    /// response is built there (never on the store writer's thread, which only resumes
    /// it), as soon as `work` returns: the task keeps no `Result` of `T` for a later
    /// build, and a post makes 3–4 fewer allocations (callgrind, issue 28).
    ///
    /// `inline`: `work` starts at once, on this thread (`Task.immediate`), so a read that
    /// never suspends (of the embedded store) is answered before the handler returns.
    /// A change, which always waits for its commit, starts as a job on the loop once the
    /// access handler returned.
    func answer<T: Sendable>(
        inline: Bool = true, _ work: @escaping @Sendable () async throws(EngineError) -> T,
        _ render: @escaping @Sendable (Result<T, EngineError>) -> HTTPResponse
    ) {
        let operation: @Sendable () async -> Void = {
            let response: HTTPResponse
            do throws(EngineError) {
                response = render(.success(try await work()))
            } catch {
                response = render(.failure(error))
            }
            respond(response)
        }
        if inline {
            Task.immediate(executorPreference: responder.executor, operation: operation)
        } else {
            Task(executorPreference: responder.executor, operation: operation)
        }
    }

    /// As ``answer(inline:_:_:)`` (started inline), for work that may park, as a long-poll
    /// does: `work` gets `later`, which answers the request when called (once). Work that
    /// answers at once returns its value; work that parked returns nil, and its task ends:
    /// a parked request holds no task (a suspended one cost ~8 KiB a waiter, issue 28).
    func answer<T: Sendable>(
        parking work: @escaping @Sendable (_ later: @escaping @Sendable (T) -> Void) async throws(EngineError) -> T?,
        _ render: @escaping @Sendable (Result<T, EngineError>) -> HTTPResponse
    ) {
        Task.immediate(executorPreference: responder.executor) {
            let response: HTTPResponse
            do throws(EngineError) {
                // A parked waiter's answer comes through `later`, from whoever wakes it.
                guard let value = try await work({ value in reply { render(.success(value)) } }) else { return }
                response = render(.success(value))
            } catch {
                response = render(.failure(error))
            }
            respond(response)
        }
    }
}
