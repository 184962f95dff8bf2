// ahc-baseline: AsyncHTTPClient alone, POSTing alertd-shaped signed webhook
// deliveries to one URL with exactly C requests in flight, for the ceiling
// alertd's delivery rate is compared with (bench/callbacks/throughput.py).
//
//   ahc-baseline --url http://127.0.0.1:19202/hook --secret whsec_… [-c 32] [-d 5] [--warmup 1] [--no-sign]
//
// What is the same as alertd's delivery worker (Sources/AlertdDeliveryWorker/DeliveryWorker.swift):
// - one HTTPClient on the `.singleton` event loop group, with the worker's
//   configuration: redirects disallowed, connect timeout, 60 s idle pool,
//   decompression off, HTTP/1 only, no retry of connection establishment,
//   `concurrentHTTP1ConnectionsPerHostSoftLimit` 128 (32 × 4), no tracer;
// - per request: the signing key made from the secret, the headers built in
//   the same order (content-type, user-agent, webhook-id, webhook-timestamp,
//   webhook-signature = "v1," + base64 HMAC-SHA256 over "id.timestamp.body"),
//   an `HTTPClient.Request` from the URL string with `.bytes(body)`, sent with
//   `execute(request:delegate:eventLoop:deadline:)`, a delegate that keeps the
//   response head only, `.delegate(on:)` the request's event loop;
// - each of the C slots is given an event loop of the group in turn and sends
//   its next request from the completion of the previous one, on that loop
//   (alertd's worker goes on with what is due from the completed attempt).
// What alertd does besides, and this does not: the delivery queue, the deny
// list and resolution, the store and the group commit of every attempt.
//
// Prints one JSON line on stdout: requests/s over the counted seconds, latency
// percentiles (request built → response complete), CPU seconds of this process
// (getrusage, all threads) over the same seconds. Progress on stderr.

import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Options: Sendable {
    var url = ""
    var concurrency = 32
    var duration = 5.0
    var warmup = 1.0
    var secret = ""
    var sign = true
    var timeout = 10.0
    var softLimit = 32 * 4
    var events = 1024

    static let usage = """
        usage: ahc-baseline --url URL [--secret SECRET | --no-sign] [options]
          --url URL          where to POST (http://127.0.0.1:PORT/PATH)
          --secret S         webhook secret (whsec_<base64> or plain text), required unless --no-sign
          --no-sign          send webhook-signature as a fixed string (no HMAC per request)
          -c, --concurrency  requests in flight, each slot sending its next when one completes (32)
          -d, --duration     counted seconds (5)
          --warmup S         uncounted seconds first (1)
          --timeout S        deadline of each request and connect timeout (10)
          --soft-limit N     concurrentHTTP1ConnectionsPerHostSoftLimit (128, as alertd: 32 x 4)
          --events N         distinct event ids / bodies rotated over (1024)
        """

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("error: \(message)\n\(usage)\n".utf8))
            exit(2)
        }
        func value() -> String {
            i += 1
            guard i < args.count else { fail("\(args[i - 1]) needs a value") }
            return args[i]
        }
        func number(_ s: String) -> Double {
            guard let v = Double(s), v >= 0 else { fail("not a number: \(s)") }
            return v
        }
        while i < args.count {
            switch args[i] {
            case "--url": o.url = value()
            case "--secret": o.secret = value()
            case "--no-sign": o.sign = false
            case "-c", "--concurrency": o.concurrency = Int(number(value()))
            case "-d", "--duration": o.duration = number(value())
            case "--warmup": o.warmup = number(value())
            case "--timeout": o.timeout = number(value())
            case "--soft-limit": o.softLimit = Int(number(value()))
            case "--events": o.events = Int(number(value()))
            case "-h", "--help":
                print(usage)
                exit(0)
            default: fail("unknown argument \(args[i])")
            }
            i += 1
        }
        if o.url.isEmpty { fail("--url is required") }
        if o.sign && o.secret.isEmpty { fail("--secret is required (or --no-sign)") }
        if o.concurrency < 1 || o.events < 1 || o.duration <= 0 || o.softLimit < 1 { fail("bad option value") }
        return o
    }
}

// MARK: - Signing, as AlertdWire's WebhookKey / WebhookSignature

struct WebhookKey: Sendable {
    let bytes: [UInt8]

    init(secret: String) throws {
        if secret.hasPrefix("whsec_") {
            guard let decoded = Data(base64Encoded: String(secret.dropFirst(6))), !decoded.isEmpty else {
                throw BaselineError("bad whsec_ secret")
            }
            bytes = Array(decoded)
        } else {
            bytes = Array(secret.utf8)
        }
    }
}

enum WebhookSignature {
    static func sign(id: String, timestamp: Int64, body: [UInt8], key: WebhookKey) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: key.bytes))
        hmac.update(data: Array("\(id).\(timestamp).".utf8))
        body.withUnsafeBytes { hmac.update(data: $0) }
        return "v1," + Data(Array(hmac.finalize())).base64EncodedString()
    }
}

struct BaselineError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

// MARK: - The events: shaped like bench/callbacks/wrk_webhook.lua's

struct Event: Sendable {
    let id: String  // webhook-id
    let body: [UInt8]
}

func makeEvents(_ n: Int) -> [Event] {
    (0..<n).map { k in
        let digits = String(k)
        let num = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        let alertID = "01JDB000000000000BENCH" + num
        let body =
            #"{"type":"alert.answered","timestamp":"2026-11-21T21:05:58.131Z","data":{"alert":"#
            + #"{"id":""# + alertID + #"","client":"bench-"# + String(k % 64) + #"","state":"answered","position":null,"#
            + #""title":"Deploy build 4711 to production?","#
            + #""message":"All 1342 checks passed on commit 9f3c2e1. The rollout takes about 4 minutes and can be rolled back.","#
            + #""style":"alert","buttons":[{"title":"Deploy","style":"default"},{"title":"Cancel","style":"cancel"}],"#
            + #""priority":0,"expires_in":86400,"dismiss_after":null,"callback_url":"http://127.0.0.1:19101/hook","#
            + #""metadata":{"service":"checkout","build":4711,"requested_by":"ci"},"#
            + #""created_at":"2026-11-21T21:05:58.131Z","displayed_at":"2026-11-21T21:05:58.131Z","#
            + #""decided_at":"2026-11-21T21:05:58.531Z","expires_at":"2026-11-22T21:05:58.131Z","#
            + #""result":{"outcome":"answered","button":"Deploy","button_index":0,"cancelled":false,"decided_by":null}}}}"#
        return Event(id: "msg_01JDB000000000000EVENT" + num, body: Array(body.utf8))
    }
}

// MARK: - The response delegate: alertd's StatusOnly

final class StatusOnly: HTTPClientResponseDelegate, @unchecked Sendable {
    private var head: HTTPResponseHead?

    func didReceiveHead(task: HTTPClient.Task<HTTPResponseHead>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        self.head = head
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<HTTPResponseHead>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<HTTPResponseHead>) throws -> HTTPResponseHead {
        guard let head else { throw HTTPClientError.remoteConnectionClosed }
        return head
    }
}

// MARK: - The load

/// One of the C slots. Touched only on its event loop while running, and by
/// the main thread after every slot has stopped.
final class Slot: @unchecked Sendable {
    let eventLoop: any EventLoop
    var next: Int
    /// Completion time and latency (ns, monotonic) of every completed request.
    var ends: [UInt64] = []
    var latencies: [UInt64] = []
    var non2xx = 0
    var errors = 0
    var firstError: String?

    init(eventLoop: any EventLoop, first: Int) {
        self.eventLoop = eventLoop
        next = first
        ends.reserveCapacity(1 << 16)
        latencies.reserveCapacity(1 << 16)
    }
}

final class Load: @unchecked Sendable {
    let client: HTTPClient
    let options: Options
    let events: [Event]
    let stopping = Atomic<Bool>(false)
    let stopped = DispatchGroup()
    static let userAgent = "alertd"

    init(client: HTTPClient, options: Options, events: [Event]) {
        self.client = client
        self.options = options
        self.events = events
    }

    /// Sends the slot's next request; its completion sends the one after, until stopping.
    func fire(_ slot: Slot) {
        if stopping.load(ordering: .relaxed) {
            stopped.leave()
            return
        }
        let event = events[slot.next % events.count]
        slot.next += options.concurrency
        let eventLoop = slot.eventLoop
        let started = NIODeadline.now()
        let deadline = started + .milliseconds(Int64(options.timeout * 1000))
        let request: HTTPClient.Request
        do {
            let timestamp = Int64(Date().timeIntervalSince1970)
            var headers = HTTPHeaders()
            headers.reserveCapacity(7)
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "user-agent", value: Self.userAgent)
            headers.add(name: "webhook-id", value: event.id)
            headers.add(name: "webhook-timestamp", value: String(timestamp))
            if options.sign {
                let key = try WebhookKey(secret: options.secret)  // per attempt, as alertd
                headers.add(
                    name: "webhook-signature",
                    value: WebhookSignature.sign(id: event.id, timestamp: timestamp, body: event.body, key: key))
            } else {
                headers.add(name: "webhook-signature", value: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=")
            }
            request = try HTTPClient.Request(url: options.url, method: .POST, headers: headers, body: .bytes(event.body))
        } catch {
            return failed(slot, "\(error)")
        }
        client.execute(request: request, delegate: StatusOnly(), eventLoop: .delegate(on: eventLoop), deadline: deadline)
            .futureResult.map { head in Int(head.status.code) }
            .whenComplete { [self] result in
                switch result {
                case .success(let status):
                    let end = NIODeadline.now()
                    slot.ends.append(end.uptimeNanoseconds)
                    slot.latencies.append(end.uptimeNanoseconds - started.uptimeNanoseconds)
                    if !(200..<300).contains(status) { slot.non2xx += 1 }
                    fire(slot)
                case .failure(let error):
                    failed(slot, "\(error)")
                }
            }
    }

    /// A request that got no answer: counted, and the slot goes on 1 ms later
    /// (no busy loop against a receiver that is not there).
    private func failed(_ slot: Slot, _ error: String) {
        slot.errors += 1
        if slot.firstError == nil { slot.firstError = error }
        slot.eventLoop.scheduleTask(in: .milliseconds(1)) { [self] in fire(slot) }
    }
}

func cpuSeconds() -> (user: Double, system: Double) {
    var usage = rusage()
    #if canImport(Glibc)
    _ = getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    _ = getrusage(RUSAGE_SELF, &usage)
    #endif
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return (seconds(usage.ru_utime), seconds(usage.ru_stime))
}

func percentileMs(_ sorted: [UInt64], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
    return round3(Double(sorted[min(sorted.count - 1, max(0, rank))]) / 1e6)
}

func round3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
func round1(_ x: Double) -> Double { (x * 10).rounded() / 10 }

@main
struct AHCBaseline {
    static func main() throws {
        let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
        let events = makeEvents(options.events)

        // alertd's DeliveryWorker configuration.
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .milliseconds(Int64(options.timeout * 1000))),
            connectionPool: .init(idleTimeout: .seconds(60)),
            ignoreUncleanSSLShutdown: false,
            decompression: .disabled)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = options.softLimit
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.httpVersion = .http1Only
        configuration.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)

        let banner = "ahc-baseline: \(options.url), \(options.concurrency) in flight, \(options.warmup) s warm-up + "
            + "\(options.duration) s, \(options.sign ? "signed" : "not signed"), body \(events[0].body.count) bytes\n"
        FileHandle.standardError.write(Data(banner.utf8))

        let load = Load(client: client, options: options, events: events)
        let slots = (0..<options.concurrency).map { Slot(eventLoop: client.eventLoopGroup.next(), first: $0) }
        for slot in slots {
            load.stopped.enter()
            slot.eventLoop.execute { load.fire(slot) }
        }
        Thread.sleep(forTimeInterval: options.warmup)
        let cpu0 = cpuSeconds()
        let t0 = NIODeadline.now()
        Thread.sleep(forTimeInterval: options.duration)
        let t1 = NIODeadline.now()
        let cpu1 = cpuSeconds()
        load.stopping.store(true, ordering: .relaxed)
        load.stopped.wait()
        try client.syncShutdown()

        let lo = t0.uptimeNanoseconds, hi = t1.uptimeNanoseconds
        var latencies: [UInt64] = []
        var total = 0
        for slot in slots {
            total += slot.ends.count
            for (end, latency) in zip(slot.ends, slot.latencies) where end >= lo && end < hi { latencies.append(latency) }
        }
        latencies.sort()
        let seconds = Double(hi - lo) / 1e9
        let user = cpu1.user - cpu0.user, system = cpu1.system - cpu0.system
        let counted = latencies.count
        let errors = slots.reduce(0) { $0 + $1.errors }
        var result: [String: Any] = [
            "url": options.url, "concurrency": options.concurrency, "signed": options.sign,
            "body_bytes": events[0].body.count, "warmup_s": options.warmup, "seconds": round3(seconds),
            "requests": counted, "requests_total": total, "rps": round1(Double(counted) / seconds),
            "p50_ms": percentileMs(latencies, 50), "p90_ms": percentileMs(latencies, 90),
            "p99_ms": percentileMs(latencies, 99), "max_ms": percentileMs(latencies, 100),
            "cpu_s": round3(user + system), "cpu_user_s": round3(user), "cpu_sys_s": round3(system),
            "cpu_per_s": round3((user + system) / seconds),
            "cpu_us_per_req": counted > 0 ? round3((user + system) / Double(counted) * 1e6) : 0,
            "non2xx": slots.reduce(0) { $0 + $1.non2xx }, "errors": errors,
        ]
        if let first = slots.lazy.compactMap(\.firstError).first { result["first_error"] = first }
        let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: json, as: UTF8.self))
        if counted == 0 { exit(1) }
    }
}
