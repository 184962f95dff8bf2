import Glibc

/// A TCP port on 127.0.0.1 bound but not listening: connections to it are refused, and no
/// other socket can bind it until ``release()`` (a receiver that is down, then back).
public final class ReservedPort: @unchecked Sendable {
    // @unchecked: `fd` is only changed by `release()`, which the one test owning it calls.
    public let port: Int
    private var fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound else { throw TestFailure("cannot reserve a port: errno \(errno)") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { release() }
}

/// Connects the TCP socket `fd` to 127.0.0.1:`port`; connect(2)'s result (0, or -1 with `errno`).
public func connectLoopback(_ fd: Int32, port: Int) -> Int32 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}
