import AlertdCore
import AlertdDelivery
import AsyncHTTPClient
import Logging
import NIOConcurrencyHelpers

/// HTTP clients that each connect one host name to one address, for https
/// attempts to a name: the connection must go to the address that was checked
/// against the deny list, while SNI and certificate verification use the name.
///
/// AsyncHTTPClient does that with `HTTPClient.Configuration.dnsOverride`
/// (name → address), which belongs to a client, not to a request; hence one
/// client per (name, address), made on first use with the worker's
/// configuration and kept for the next attempts (with its keep-alive
/// connections).
///
/// Bounded: past ``capacity`` clients, the least recently used one that no
/// attempt holds is shut down. A client in use is never shut down under its
/// attempt; when every client is in use a new one is made anyway (the attempts
/// in flight are bounded), and the surplus is shut down as attempts give
/// theirs back.
///
/// ```swift
/// let lease = try pinned.lease(host: "hooks.example.com", address: checked)
/// lease.client.execute(request: request, …).futureResult.whenComplete { _ in pinned.giveBack(lease) }
/// ```
final class PinnedClients: @unchecked Sendable {
    struct Key: Hashable, Sendable {
        let host: String
        let address: IPAddress
    }

    /// A client lent to one attempt; give it back exactly once.
    struct Lease: Sendable {
        let client: HTTPClient
        fileprivate let key: Key
    }

    private final class Entry {
        let client: HTTPClient
        var users = 0
        var lastUsed: UInt64 = 0

        init(client: HTTPClient) { self.client = client }
    }

    // Guarded by `lock`.
    private var entries: [Key: Entry] = [:]
    private var tick: UInt64 = 0
    private var closed = false
    private let lock = NIOLock()

    /// Clients kept at most, in use or not (more only while all are in use).
    let capacity: Int
    private let configuration: HTTPClient.Configuration
    private let logger: Logger

    /// - Parameter configuration: every client's configuration; its `dnsOverride` is replaced.
    init(capacity: Int, configuration: HTTPClient.Configuration, logger: Logger) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.configuration = configuration
        self.logger = logger
    }

    /// The client that connects `host` to `address`, made if needed.
    ///
    /// - Parameter host: the host exactly as AsyncHTTPClient reads it from the request's URL
    ///   (`HTTPClient.Request.host`), since that is the override's key.
    /// - Throws: `HTTPClientError.alreadyShutdown` after ``shutdown()``.
    func lease(host: String, address: IPAddress) throws -> Lease {
        let key = Key(host: host, address: address)
        let (lease, evicted): (Lease, [HTTPClient]) = try lock.withLock {
            guard !closed else { throw HTTPClientError.alreadyShutdown }
            tick &+= 1
            if let entry = entries[key] {
                entry.users += 1
                entry.lastUsed = tick
                return (Lease(client: entry.client, key: key), [])
            }
            var configuration = configuration
            configuration.dnsOverride = [host: address.description]
            let entry = Entry(client: HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration))
            entry.users = 1
            entry.lastUsed = tick
            entries[key] = entry
            return (Lease(client: entry.client, key: key), evictIdle())
        }
        shutDown(evicted)
        return lease
    }

    /// Returns a client after its attempt.
    func giveBack(_ lease: Lease) {
        let evicted: [HTTPClient] = lock.withLock {
            guard let entry = entries[lease.key] else { return [] }
            entry.users -= 1
            return evictIdle()
        }
        shutDown(evicted)
    }

    /// Clients kept now (for tests).
    var count: Int { lock.withLock { entries.count } }

    /// Shuts every client down and waits for it; later leases fail. Not on an event loop.
    func shutdown() {
        let clients = lock.withLock {
            closed = true
            defer { entries.removeAll() }
            return entries.values.map(\.client)
        }
        for client in clients {
            do {
                try client.syncShutdown()
            } catch {
                logger.warning("HTTP client shutdown", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Removes the least recently used idle clients while there are more than
    /// `capacity`, and returns them to be shut down. Under the lock.
    private func evictIdle() -> [HTTPClient] {
        var evicted: [HTTPClient] = []
        while entries.count > capacity {
            guard let oldest = entries.filter({ $0.value.users == 0 }).min(by: { $0.value.lastUsed < $1.value.lastUsed }) else {
                break
            }
            entries[oldest.key] = nil
            evicted.append(oldest.value.client)
        }
        return evicted
    }

    /// Shuts clients down without waiting (this may run on an event loop).
    private func shutDown(_ clients: [HTTPClient]) {
        for client in clients {
            client.shutdown { [logger] error in
                if let error { logger.warning("HTTP client shutdown", metadata: ["error": "\(error)"]) }
            }
        }
    }
}
