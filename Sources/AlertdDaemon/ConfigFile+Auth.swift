import AlertdAPI

extension Config {
    /// `auth`: anonymous access and tokens.
    static func readAuth(_ auth: Section, into config: inout Config, source: String, _ problems: Problems) {
        auth.only(["allow_anonymous", "tokens"])
        problems.check { if let v = try auth.bool("allow_anonymous") { config.allowAnonymous = v } }
        for (index, node) in ((problems.check { try auth.list("tokens") } ?? nil) ?? []).enumerated() {
            guard let entry = problems.section(node, path: "auth.tokens[\(index)]", source: source) else { continue }
            if let token = Self.token(entry, existing: config.tokens, problems) { config.tokens.append(token) }
        }
    }

    /// One entry of `auth.tokens`: every problem of it is recorded, each under its key (a
    /// missing name and a bad role are both said); nil when it has any.
    private static func token(_ entry: Section, existing: [Token], _ problems: Problems) -> Token? {
        entry.only(["name", "sha256", "roles", "clients"])
        var valid = true
        func check<T>(_ body: () throws -> T?) -> T? {
            guard let value = problems.check(body) ?? nil else {
                valid = false
                return nil
            }
            return value
        }
        let name = check { () throws -> String? in
            guard let name = try entry.string("name"), !name.isEmpty, name.utf8.count <= 64,
                name.utf8.allSatisfy({ $0 > 32 && $0 < 127 })
            else {
                let space = (try? entry.string("name"))??.contains(" ") == true ? "; a space is not one (use - or _)" : ""
                throw entry.error("name", "is required: up to 64 visible ASCII characters\(space)")
            }
            guard !existing.contains(where: { $0.name == name }) else {
                throw entry.error("name", "\(name) is already the name of another token", separator: ": ")
            }
            return name
        }
        let digest = check { () throws -> [UInt8]? in
            guard let hex = try entry.string("sha256"), let digest = Self.digest(hex: hex) else {
                throw entry.error("sha256", "must be the 64 hex digits of the secret's SHA-256 (alertd token new prints it)")
            }
            guard !existing.contains(where: { $0.digest == digest }) else {
                throw entry.error("sha256", "is the same secret as another token's")
            }
            return digest
        }
        let roles = check { () throws -> Set<Role>? in
            guard let roleNames = try entry.strings("roles"), !roleNames.isEmpty else {
                throw entry.error("roles", "must list at least one of read, post, answer, admin, alertmanager")
            }
            var roles: Set<Role> = []
            var unknown: [String] = []
            for roleName in roleNames {
                if let role = Role(rawValue: roleName) { roles.insert(role) } else { unknown.append(roleName) }
            }
            guard unknown.isEmpty else {
                let hints = unknown.map { name in
                    Section.closest(to: name, in: Set(Role.allCases.map(\.rawValue))).map { "\(name) (did you mean \($0)?)" } ?? name
                }
                throw entry.error(
                    "roles",
                    "\(hints.joined(separator: ", ")) \(unknown.count == 1 ? "is not one" : "are not any") of read, post, answer, admin, alertmanager",
                    separator: ": ")
            }
            return roles
        }
        let clients = check { () throws -> [ClientPattern]? in
            guard let patterns = try entry.strings("clients"), !patterns.isEmpty else {
                throw entry.error("clients", "must list client ids or globs (\"*\" for every client)")
            }
            var clients: [ClientPattern] = []
            var bad: [String] = []
            for text in patterns {
                if let pattern = ClientPattern(text) { clients.append(pattern) } else { bad.append(text) }
            }
            guard bad.isEmpty else {
                throw entry.error(
                    "clients",
                    "\(bad.joined(separator: ", ")) \(bad.count == 1 ? "is not a client id glob" : "are not client id globs") (letters, digits, . _ - and *)",
                    separator: ": ")
            }
            return clients
        }
        guard valid, let name, let digest, let roles, let clients else { return nil }
        return Token(name: name, digest: digest, roles: roles, clients: clients)
    }
}
