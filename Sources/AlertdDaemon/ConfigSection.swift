import AlertdWire
import Yams

/// The problems found so far: one per key (the first), in the order found.
final class Problems {
    private(set) var errors: [ConfigError] = []
    private var keys = Set<String>()
    /// The config file's directory, for relative paths in it.
    let directory: String?

    init(directory: String?) { self.directory = directory }

    /// `path` as written in the file, resolved against the file's directory when it is relative.
    func path(_ path: String) -> String { Config.resolve(path, from: directory) }

    func add(_ error: ConfigError) {
        if let key = error.key, !keys.insert(key).inserted { return }
        errors.append(error)
    }

    func has(_ key: String) -> Bool { keys.contains(key) }

    /// Runs `body`; a problem it throws is recorded and nil returned.
    @discardableResult
    func check<T>(_ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch let error as ConfigError {
            add(error)
        } catch {
            add(ConfigError("\(error)"))
        }
        return nil
    }

    /// A mapping to read; nil (and a problem) when it is not one.
    func section(_ node: Node, path: String, source: String) -> Section? {
        check { try Section(node, path: path, source: source, problems: self) }
    }
}

/// A YAML mapping being read, with its key path for error messages.
struct Section {
    let entries: [(key: String, value: Node)]
    let path: String
    let source: String
    let problems: Problems

    init(_ node: Node, path: String, source: String, problems: Problems) throws {
        guard case .mapping(let mapping) = node else {
            throw ConfigError("\(source): \(path.isEmpty ? "the file" : path) must be a mapping", key: path)
        }
        var entries: [(key: String, value: Node)] = []
        for (key, value) in mapping {
            guard let name = key.string else {
                throw ConfigError("\(source): \(path) has a key that is not a string", key: path)
            }
            if entries.contains(where: { $0.key == name }) {
                throw ConfigError("\(source): \(Section.name(name, path)) appears twice", key: Section.name(name, path))
            }
            entries.append((name, value))
        }
        self.entries = entries
        self.path = path
        self.source = source
        self.problems = problems
    }

    var keys: [String] { entries.map(\.key) }

    private static func name(_ key: String, _ path: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
    private func name(_ key: String) -> String { Section.name(key, path) }

    /// The problem of one key: `source: path.key message`.
    func error(_ key: String, _ message: String, separator: String = " ") -> ConfigError {
        ConfigError("\(source): \(name(key))\(separator)\(message)", key: name(key))
    }

    func has(_ key: String) -> Bool { entries.contains { $0.key == key } }

    private func value(_ key: String) -> Node? {
        guard let node = entries.first(where: { $0.key == key })?.value else { return nil }
        if case .scalar(let scalar) = node,
            scalar.string == "~" || scalar.string == "null" || (scalar.string.isEmpty && scalar.style == .plain)
        {
            return nil
        }
        return node
    }

    /// Records every key not in `allowed`, with the allowed key it most likely means.
    func only(_ allowed: Set<String>) {
        for key in keys where !allowed.contains(key) {
            let hint = Self.closest(to: key, in: allowed).map { " (did you mean \($0)?)" } ?? ""
            problems.add(ConfigError("\(source): unknown key \(name(key))\(hint)", key: name(key)))
        }
    }

    /// The allowed key a misspelt one most likely means: at most a third of its
    /// letters (and at least one) edited away.
    static func closest(to key: String, in allowed: Set<String>) -> String? {
        let key = key.lowercased()
        let length = key.count
        let limit = max(1, length / 3)
        // The distance is at least the difference in length: a key far longer or
        // shorter than every allowed one (a value pasted as a key) costs no table.
        let scored = allowed.filter { abs($0.count - length) <= limit }.map { ($0, editDistance(key, $0)) }.filter { $0.1 <= limit }
        return scored.min { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }?.0
    }

    /// Levenshtein distance, with a swap of two neighbours counting as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }

    func section(_ key: String) throws -> Section? {
        guard let node = value(key) else { return nil }
        return try Section(node, path: name(key), source: source, problems: problems)
    }

    func string(_ key: String) throws -> String? {
        guard let node = value(key) else { return nil }
        guard case .scalar(let scalar) = node else { throw error(key, "must be a string") }
        return scalar.string
    }

    func int(_ key: String, min: Int = .min, max: Int = .max) throws -> Int? {
        guard let node = value(key) else { return nil }
        guard let v = node.int else { throw error(key, "must be an integer") }
        guard v >= min, v <= max else { throw error(key, "must be between \(min) and \(max), not \(v)") }
        return v
    }

    /// The longest duration alertd takes: a century, far inside its millisecond timestamps.
    static let maxSeconds: Double = 100 * 365.25 * 86_400

    /// A finite number greater than 0.
    func positiveNumber(_ key: String) throws -> Double? {
        guard let node = value(key) else { return nil }
        guard let v = node.float ?? node.int.map(Double.init), v.isFinite, v > 0, v <= 1e9 else {
            throw error(key, "must be a number greater than 0")
        }
        return v
    }

    /// A number of seconds, or a duration as Alertmanager writes it (`90s`, `5m`, `1h30m`: ``DurationText``).
    func seconds(_ key: String) throws -> Double? {
        guard let node = value(key) else { return nil }
        guard let v = node.float ?? node.int.map(Double.init) ?? node.string.flatMap(DurationText.seconds), v.isFinite, v > 0 else {
            throw error(key, "must be a number of seconds or a duration (90s, 5m, 1h30m), greater than 0")
        }
        guard v <= Self.maxSeconds else { throw error(key, "must be at most \(Int(Self.maxSeconds)) seconds (100 years)") }
        return v
    }

    func bool(_ key: String) throws -> Bool? {
        guard let node = value(key) else { return nil }
        guard let v = node.bool else { throw error(key, "must be true or false") }
        return v
    }

    func list(_ key: String) throws -> [Node]? {
        guard let node = value(key) else { return nil }
        guard case .sequence(let sequence) = node else { throw error(key, "must be a list") }
        return Array(sequence)
    }

    func strings(_ key: String) throws -> [String]? {
        guard let node = value(key) else { return nil }
        guard case .sequence(let sequence) = node else { throw error(key, "must be a list") }
        return try sequence.map { item in
            guard let s = item.string else { throw error(key, "must hold strings") }
            return s
        }
    }
}
