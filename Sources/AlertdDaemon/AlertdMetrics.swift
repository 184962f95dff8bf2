import AlertdAPI
import AlertdDeliveryWorker
import AlertdCore
import AlertdEngine
import AlertdHTTP
import AlertdPostgres
import AlertdVersion
import AlertdWire
import CoreMetrics
import Foundation
import struct NIOConcurrencyHelpers.NIOLockedValueBox
import Prometheus

/// alertd's metrics, through swift-metrics with a Prometheus registry of its
/// own (not the process-wide bootstrap, so several alertd cores can live in
/// one test process). `/metrics` renders the registry in the text format.
///
/// Every label has a bounded set of values: routes are the route table's,
/// statuses are HTTP codes, outcomes and results are enums. Client ids are
/// never labels (anyone may invent one).
final class AlertdMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    /// Per route and status: its request counter and its route's duration histogram.
    private let requestMetrics = NIOLockedValueBox<[RequestKey: (count: CoreMetrics.Counter, duration: CoreMetrics.Timer)]>([:])
    /// Hashed on every request: no string is built for it.
    private struct RequestKey: Hashable {
        let route: String
        let status: Int
    }
    private let terminalCounters = NIOLockedValueBox<[String: CoreMetrics.Counter]>([:])
    private let deliveryCounters = NIOLockedValueBox<[String: CoreMetrics.Counter]>([:])
    let alertsCreated: CoreMetrics.Counter
    let commitDuration: CoreMetrics.Timer
    let deliveryLatency: CoreMetrics.Timer
    let pending: CoreMetrics.Gauge
    /// The store's size: its files, or its tables in PostgreSQL.
    let storeBytes: CoreMetrics.Gauge
    /// The terminal alerts' bytes as retention counts them, and their bound (`alerts.retention_max_bytes`).
    let retainedBytes: CoreMetrics.Gauge
    let retainedBytesLimit: CoreMetrics.Gauge
    /// Signed receipts kept (SPEC §14), their bytes, and the chain's last `seq`.
    let receipts: CoreMetrics.Gauge
    let receiptBytes: CoreMetrics.Gauge
    let receiptSeq: CoreMetrics.Gauge
    let waiters: CoreMetrics.Gauge
    let pushSubscriptions: CoreMetrics.Gauge
    /// Deliveries not yet made: waiting for their time, and attempts in flight.
    let deliveriesWaiting: CoreMetrics.Gauge
    let deliveriesInFlight: CoreMetrics.Gauge
    /// The shared store's flushes: the changes they committed and their round trips to the database.
    let flushedChanges: CoreMetrics.Counter
    let roundTrips: CoreMetrics.Counter
    /// The HTTP server's own counts, once it exists (it is made after the API).
    /// (In a ``KeptClosure``: read at every scrape.)
    private let server = NIOLockedValueBox<KeptClosure<@Sendable () -> HTTPServer.Counts?>?>(nil)

    func observeServer(_ counts: @escaping @Sendable () -> HTTPServer.Counts?) { server.withLockedValue { $0 = KeptClosure(counts) } }

    /// The server's counts in the text format (none before the server exists).
    private func serverExposition() -> String {
        guard let counts = server.withLockedValue({ $0 })?.call() else { return "" }
        var lines = [
            "# HELP alertd_http_response_bytes_in_flight Bytes of answers queued and not yet taken by their clients (limits.max_response_bytes_in_flight bounds them).",
            "# TYPE alertd_http_response_bytes_in_flight gauge",
            "alertd_http_response_bytes_in_flight \(counts.responseBytesInFlight)",
            "# HELP alertd_http_connections_cut_total Connections closed for a passed deadline, by what they were waiting for: first_byte, request (the rest of one), answer (the client to take it).",
            "# TYPE alertd_http_connections_cut_total counter",
        ]
        lines += counts.cut.map { "alertd_http_connections_cut_total{waiting=\"\($0.waiting)\"} \($0.count)" }
        lines += [
            "# HELP alertd_http_connections_refused_total Connections closed as they were accepted, by reason: address (limits.max_connections_per_ip), capacity (every slot taken).",
            "# TYPE alertd_http_connections_refused_total counter",
        ]
        lines += counts.refused.map { "alertd_http_connections_refused_total{reason=\"\($0.reason)\"} \($0.count)" }
        return lines.joined(separator: "\n") + "\n"
    }

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        let fast: [Duration] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
        ]
        factory.defaultDurationHistogramBuckets = fast
        factory.durationHistogramBuckets["alertd_delivery_latency_seconds"] =
            fast + [.seconds(300), .seconds(1800), .seconds(3600), .seconds(86_400)]
        self.factory = factory
        alertsCreated = CoreMetrics.Counter(label: "alertd_alerts_created_total", factory: factory)
        commitDuration = CoreMetrics.Timer(label: "alertd_store_commit_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
        deliveryLatency = CoreMetrics.Timer(label: "alertd_delivery_latency_seconds", preferredDisplayUnit: .seconds, factory: factory)
        pending = CoreMetrics.Gauge(label: "alertd_alerts_pending", factory: factory)
        storeBytes = CoreMetrics.Gauge(label: "alertd_store_bytes", factory: factory)
        retainedBytes = CoreMetrics.Gauge(label: "alertd_store_retained_bytes", factory: factory)
        retainedBytesLimit = CoreMetrics.Gauge(label: "alertd_store_retained_bytes_limit", factory: factory)
        receipts = CoreMetrics.Gauge(label: "alertd_receipts", factory: factory)
        receiptBytes = CoreMetrics.Gauge(label: "alertd_receipts_bytes", factory: factory)
        receiptSeq = CoreMetrics.Gauge(label: "alertd_receipts_last_seq", factory: factory)
        waiters = CoreMetrics.Gauge(label: "alertd_waiters", factory: factory)
        pushSubscriptions = CoreMetrics.Gauge(label: "alertd_push_subscriptions", factory: factory)
        deliveriesWaiting = CoreMetrics.Gauge(label: "alertd_deliveries_pending", dimensions: [("state", "waiting")], factory: factory)
        deliveriesInFlight = CoreMetrics.Gauge(label: "alertd_deliveries_pending", dimensions: [("state", "in_flight")], factory: factory)
        flushedChanges = CoreMetrics.Counter(label: "alertd_store_changes_total", factory: factory)
        roundTrips = CoreMetrics.Counter(label: "alertd_store_round_trips_total", factory: factory)
    }

    /// A flush of the shared store committed.
    func flushed(_ cost: PostgresAlertStore.FlushCost) {
        commitDuration.recordNanoseconds(Int64(cost.nanoseconds))
        flushedChanges.increment(by: cost.changes)
        roundTrips.increment(by: cost.roundTrips)
    }

    /// One answered request: `route` is the route's name (`unmatched` for 404/405).
    func request(route: String, status: Int, nanoseconds: UInt64) {
        let key = RequestKey(route: route, status: status)
        let (counter, timer) = requestMetrics.withLockedValue { cache in
            if let metrics = cache[key] { return metrics }
            // A route's timer is the same histogram whatever the status: the registry hands it out once.
            let metrics = (
                count: CoreMetrics.Counter(
                    label: "alertd_http_requests_total", dimensions: [("route", route), ("status", String(status))], factory: factory),
                duration: CoreMetrics.Timer(
                    label: "alertd_http_request_duration_seconds", dimensions: [("route", route)], preferredDisplayUnit: .seconds,
                    factory: factory)
            )
            cache[key] = metrics
            return metrics
        }
        counter.increment()
        timer.recordNanoseconds(Int64(nanoseconds))
    }

    /// The clients escalations are counted by name (SPEC §12): those the config names, under
    /// `clients:` or as a step's `to`. Any other is counted as `other`, so that no poster
    /// can grow the label set (client ids are labels here only because the config bounds them).
    private let namedClients = NIOLockedValueBox<Set<String>>([])
    private let escalationCounters = NIOLockedValueBox<[String: CoreMetrics.Counter]>([:])

    /// Takes the clients a (reloaded) config names.
    func name(clients: Set<String>) { namedClients.withLockedValue { $0 = clients } }

    /// An escalation step was committed: an alert of `client` was also queued on `to`.
    func escalated(client: String, to: String) {
        let (from, target) = namedClients.withLockedValue { named in
            (named.contains(client) ? client : "other", named.contains(to) ? to : "other")
        }
        let key = from + "\n" + target
        escalationCounters.withLockedValue { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(
                label: "alertd_escalations_total", dimensions: [("client", from), ("to", target)], factory: factory)
            counters[key] = counter
            return counter
        }.increment()
    }

    /// An alert reached a terminal state.
    func terminal(_ outcome: String) {
        counter(terminalCounters, key: outcome, label: "alertd_alerts_terminal_total", dimension: "outcome").increment()
    }

    /// A delivery attempt of `kind` (callback, push, alertmanager_silence) ended: `delivered`, `retry` or `failed`.
    func delivery(_ result: String, kind: DeliveryKind) {
        let key = kind.label + "/" + result
        deliveryCounters.withLockedValue { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(
                label: "alertd_deliveries_total", dimensions: [("kind", kind.label), ("result", result)], factory: factory)
            counters[key] = counter
            return counter
        }.increment()
    }

    private func counter(_ cache: NIOLockedValueBox<[String: CoreMetrics.Counter]>, key: String, label: String, dimension: String)
        -> CoreMetrics.Counter
    {
        cache.withLockedValue { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(label: label, dimensions: [(dimension, key)], factory: factory)
            counters[key] = counter
            return counter
        }
    }

    /// Told of every recorded delivery attempt.
    var observeAttempt: @Sendable (AttemptRecord, PendingDelivery) -> Void {
        { [self] record, delivery in
            switch record.state {
            case .delivered:
                self.delivery("delivered", kind: delivery.kind)
                deliveryLatency.recordMilliseconds(max(0, record.attempt.at.milliseconds - delivery.eventCreatedAt.milliseconds))
            case .pending: self.delivery("retry", kind: delivery.kind)
            case .failed: self.delivery("failed", kind: delivery.kind)
            // An attempt never settles a delivery as cancelled: a webhook's removal does.
            case .cancelled: break
            }
        }
    }

    /// What the API records per request, and its `/metrics` with the gauges up to date.
    func api(engine: Engine, deliveries: DeliveryWorker) -> API.Metrics {
        API.Metrics(
            request: { [self] route, status, nanoseconds in request(route: route, status: status, nanoseconds: nanoseconds) },
            exposition: { [self] in
                pending.record(engine.pendingTotal)
                if let bytes = engine.storeBytes { storeBytes.record(bytes) }
                if let bytes = engine.retainedBytes { retainedBytes.record(bytes) }
                retainedBytesLimit.record(engine.retentionMaxBytes)
                if let totals = engine.receiptTotals {
                    receipts.record(totals.count)
                    receiptBytes.record(totals.bytes)
                    receiptSeq.record(totals.lastSeq)
                }
                waiters.record(engine.waiterCount)
                pushSubscriptions.record(engine.pushSubscriptionCount)
                let (waiting, inFlight) = deliveries.counts
                deliveriesWaiting.record(waiting)
                deliveriesInFlight.record(inFlight)
                return render()
            })
    }

    /// The text format, with HELP lines for alertd's own metrics.
    func render() -> [UInt8] {
        var text = ""
        let body = registry.emitToString()
        for line in body.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), let name = line.split(separator: " ").dropFirst(2).first, let help = Self.help[String(name)] {
                text += "# HELP \(name) \(help)\n"
            }
            text += line + "\n"
        }
        while text.hasSuffix("\n\n") { text.removeLast() }
        return Array((text + Self.buildInfo + serverExposition() + ProcessMetrics.exposition()).utf8)
    }

    /// Which alertd answers: one series, always 1, its version a label (to join on, and to see a rollout).
    static let buildInfo = """
        # HELP alertd_build_info The version of alertd serving; always 1.
        # TYPE alertd_build_info gauge
        alertd_build_info{version="\(AlertdVersion.string)"} 1

        """

    static let help: [String: String] = [
        "alertd_http_requests_total": "HTTP requests answered, by route and status.",
        "alertd_http_request_duration_seconds": "Time from a request's arrival to its answer, by route (long-polls included).",
        "alertd_alerts_created_total": "Alerts created.",
        "alertd_alerts_terminal_total": "Alerts that reached a terminal state, by outcome.",
        "alertd_alerts_pending": "Alerts queued or displayed, all clients.",
        "alertd_store_bytes":
            "Bytes the store takes: the SQLite database with its WAL, or alertd's tables in PostgreSQL (measured at each purge).",
        "alertd_store_retained_bytes":
            "Bytes of the terminal alerts kept, as alerts.retention_max_bytes counts them: each alert as rendered and its events' bodies (measured at each purge).",
        "alertd_store_retained_bytes_limit": "alerts.retention_max_bytes: what alertd_store_retained_bytes is kept below at each purge.",
        "alertd_receipts": "Signed receipts of decisions kept (SPEC §14): those receipts.retention has not removed.",
        "alertd_receipts_bytes": "Bytes of the signed receipts kept: their canonical JSON, as GET /v1/audit serves them.",
        "alertd_receipts_last_seq":
            "The seq of the last receipt written: the head of the deployment's chain (every instance's on PostgreSQL, read every second).",
        "alertd_waiters": "Requests parked in long-polls.",
        "alertd_push_subscriptions": "Web Push subscriptions this instance pushes to (0 with push off).",
        "alertd_deliveries_pending":
            "Deliveries (callbacks, pushes, silences) not yet made, by state: waiting (for their time) or in_flight.",
        "alertd_store_commit_duration_seconds":
            "Time to commit one group of writes (fsync included; on PostgreSQL, a flush from BEGIN to COMMIT).",
        "alertd_store_changes_total":
            "Changes committed by the PostgreSQL store's flushes (divide by the commit count for changes per flush).",
        "alertd_store_round_trips_total": "Round trips to PostgreSQL made by the store's flushes (BEGIN and COMMIT included).",
        "alertd_deliveries_total":
            "Delivery attempts, by kind (callback, push, alertmanager_silence) and result (delivered, retry, failed).",
        "alertd_delivery_latency_seconds": "Time from a terminal event to its delivery.",
    ]
}
