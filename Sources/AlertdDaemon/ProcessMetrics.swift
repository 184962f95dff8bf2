import Foundation
import Glibc

/// The process metrics Prometheus' client libraries export under their
/// standard names, read from `/proc/self` when `/metrics` is scraped: memory,
/// CPU, open files and start time. (swift-metrics 2.13 has no system metrics
/// of its own; this is the few lines they take on Linux.)
enum ProcessMetrics {
    /// The text exposition of the process metrics, or nothing where `/proc` is not there.
    static func exposition() -> String {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return "" }
        // Fields after the command name (which may hold spaces), from field 3 (state) on.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        var lines: [String] = []
        func gauge(_ name: String, _ type: String, _ help: String, _ value: Double?) {
            guard let value else { return }
            lines += ["# HELP \(name) \(help)", "# TYPE \(name) \(type)", "\(name) \(Self.format(value))"]
        }
        let cpu = (field(14) ?? 0) + (field(15) ?? 0)  // utime + stime, in clock ticks
        gauge("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu / ticks)
        gauge("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", field(24).map { $0 * pageSize })
        gauge("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", field(23))
        if let started = field(22), let boot = bootTime() {
            gauge("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", boot + started / ticks)
        }
        // Minus one: the listing holds a descriptor of its own while it reads.
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count).map { Double($0 - 1) }
        gauge("process_open_fds", "gauge", "Number of open file descriptors.", fds)
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            gauge("process_max_fds", "gauge", "Maximum number of open file descriptors.", Double(limit.rlim_cur))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// When the machine booted, in seconds since the epoch (`btime` in `/proc/stat`).
    private static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6))
        }
        return nil
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
