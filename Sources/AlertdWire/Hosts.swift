/// Host names and addresses as alertd judges them.
public enum Hosts {
    /// Whether `host` names this machine only: `localhost` and the names under it
    /// (RFC 6761), 127.0.0.0/8 and `::1` (in brackets or not), in any letter case.
    /// The daemon (is it listening beyond this machine?), `alertctl` (does a token
    /// cross the network in the clear?) and the PostgreSQL store (is the server
    /// unverified beyond this machine?) all ask it here.
    public static func isLoopback(_ host: String) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        return name == "localhost" || name.hasSuffix(".localhost") || name == "::1" || name.hasPrefix("127.")
    }
}
