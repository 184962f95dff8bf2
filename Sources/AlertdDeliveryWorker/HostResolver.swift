public import AlertdCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A blocking name lookup: every address of a host, for TCP to a port.
public typealias HostLookup = @Sendable (_ host: String, _ port: Int) throws -> [IPAddress]

/// Name resolution for callback targets: the system resolver (getaddrinfo),
/// which blocks, so callers run it off the event loops.
public enum HostResolver {
    public struct Failure: Error, CustomStringConvertible {
        let host: String
        let reason: String
        public var description: String { "could not resolve \(host): \(reason)" }
    }

    /// Every address `host` resolves to for TCP, in the resolver's order of preference, without repeats.
    public static func addresses(of host: String, port: Int) throws -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else { throw Failure(host: host, reason: String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry = list
        while let info = entry?.pointee {
            defer { entry = info.ai_next }
            guard let socketAddress = info.ai_addr else { continue }
            let address: IPAddress?
            switch info.ai_family {
            case AF_INET:
                address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                    withUnsafeBytes(of: ipv4.pointee.sin_addr) { IPAddress(bytes: $0) }
                }
            case AF_INET6:
                address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                    withUnsafeBytes(of: ipv6.pointee.sin6_addr) { IPAddress(bytes: $0) }
                }
            default:
                address = nil
            }
            if let address, !addresses.contains(address) { addresses.append(address) }
        }
        guard !addresses.isEmpty else { throw Failure(host: host, reason: "no addresses") }
        return addresses
    }
}

/// Resolves callback hosts off the event loops: at most one lookup per name
/// at a time (attempts to a name wait for the lookup in flight), and each
/// answer, failures included, kept for ``ttl`` seconds. A name server that
/// hangs on one name therefore holds one thread of the pool, not one per
/// attempt, and attempts to other names go on.
final class CachingResolver: @unchecked Sendable {
    private struct Answer {
        var result: Result<[IPAddress], any Error>
        var expires: NIODeadline
    }

    // Guarded by `lock`.
    private var answers: [String: Answer] = [:]
    private var inFlight: [String: [EventLoopPromise<[IPAddress]>]] = [:]
    private let lock = NIOLock()

    private let pool: NIOThreadPool
    private let ttl: TimeAmount
    private let lookUp: HostLookup

    /// - Parameters:
    ///   - threads: lookups that may block at once (each on its own name).
    ///   - lookUp: the blocking lookup; the system resolver unless a test gives another.
    init(threads: Int = 4, ttl: TimeAmount = .seconds(1), lookUp: @escaping HostLookup = HostResolver.addresses(of:port:)) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
        self.ttl = ttl
        self.lookUp = lookUp
    }

    func addresses(of host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<[IPAddress]> {
        let key = "\(host):\(port)"
        let promise = eventLoop.makePromise(of: [IPAddress].self)
        enum Next {
            case answered(Result<[IPAddress], any Error>)
            case lookUp, wait
        }
        let next: Next = lock.withLock {
            if let answer = answers[key], answer.expires > .now() { return .answered(answer.result) }
            answers[key] = nil
            inFlight[key, default: []].append(promise)
            // The first waiter of this name starts the lookup.
            return inFlight[key]!.count == 1 ? .lookUp : .wait
        }
        switch next {
        case .answered(let result):
            promise.completeWith(result)
            return promise.futureResult
        case .wait:
            return promise.futureResult
        case .lookUp:
            break
        }
        do {
            pool.submit { [self] state in
                let result: Result<[IPAddress], any Error>
                if case .active = state {
                    result = Result { try lookUp(host, port) }
                } else {
                    result = .failure(HostResolver.Failure(host: host, reason: "alertd is stopping"))
                }
                let waiting = lock.withLock {
                    answers[key] = Answer(result: result, expires: .now() + ttl)
                    if answers.count > 10_000 { answers.removeAll(keepingCapacity: true) }
                    return inFlight.removeValue(forKey: key) ?? []
                }
                for waiter in waiting { waiter.completeWith(result) }
            }
        }
        return promise.futureResult
    }

    /// Stops the pool without waiting: a lookup stuck in the system resolver
    /// must not hold up alertd's exit; its answer goes to no one.
    func shutdown() {
        pool.shutdownGracefully { _ in }
    }
}
