import AlertdDelivery

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Name resolution for callback targets: the system resolver (getaddrinfo),
/// which blocks, so callers run it off the event loops.
enum HostResolver {
    struct Failure: Error, CustomStringConvertible {
        let host: String
        let reason: String
        var description: String { "could not resolve \(host): \(reason)" }
    }

    /// Every address `host` resolves to for TCP, in the resolver's order of preference, without repeats.
    static func addresses(of host: String, port: Int) throws -> [IPAddress] {
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
