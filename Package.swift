// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "alertd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "alertd", targets: ["alertd"]),
        .library(name: "AlertdWire", targets: ["AlertdWire"]),
        .executable(name: "alertctl", targets: ["alertctl"]),
        .library(name: "AlertdClient", targets: ["AlertdClient"]),
        .library(name: "AlertdClientTesting", targets: ["AlertdClientTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Already in the graph through AsyncHTTPClient; named for the tests' webhook receivers
        // and for NIOConcurrencyHelpers' lock.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // Already in the graph through AsyncHTTPClient; the watchdog's HTTPS probe configures it.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The store shared by several instances (`store.backend: postgres`).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Tests only: the property test of the alert resource's codec.
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // The Model Context Protocol's official Swift SDK, for `alertctl mcp` (AlertdMCP). It
        // brings swift-system besides what is already in the graph (swift-log, swift-nio).
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk", from: "0.12.1"),
    ],
    targets: [
        // libmicrohttpd (Debian: libmicrohttpd-dev) plus a non-variadic starter. Not API.
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        // JSON types shared by the server and the SDK, the strict JSON parser, webhook signatures.
        .target(name: "AlertdWire", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Signed receipts (SPEC §14), pure: RFC 8785 canonical JSON, the receipt and its Ed25519
        // signature, the deployment's keys (PEM, JWKS) and the chain verifier. No I/O.
        .target(name: "AlertdReceipts", dependencies: ["AlertdWire", .product(name: "Crypto", package: "swift-crypto")]),
        // The version alertd and alertctl print, and the Debian package's (make deb reads it).
        .target(name: "AlertdVersion"),
        // The pure domain: validation, queues, transitions, deadlines. No I/O.
        .target(name: "AlertdCore", dependencies: ["AlertdWire"]),
        // Prometheus Alertmanager as a poster (docs/alertmanager.md): its webhook payload read
        // and mapped to alerts, the silences its buttons create, its settings. Pure, no I/O.
        .target(
            name: "AlertdAlertmanager",
            dependencies: ["AlertdCore", "AlertdWire", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Between the HTTP API and the store: posting, decisions, reads, deadlines, waiters,
        // webhooks, the outbox. Speaks domain values; its one view of persistence is the
        // store port (`AlertStore`) it declares.
        .target(
            name: "AlertdEngine",
            dependencies: [
                "AlertdAlertmanager", "AlertdCore", "AlertdWire", "AlertdDelivery", "AlertdPush", "AlertdReceipts",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The embedded store: the engine's store port over an in-memory board, SQLite
        // through GRDB (schema, migrations) and group commit.
        .target(
            name: "AlertdSQLite",
            dependencies: [
                "AlertdCore", "AlertdEngine", "AlertdReceipts",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for binding the hottest statement's columns directly.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The store shared by several instances: the engine's store port over PostgreSQL
        // (postgres-nio), a transaction per client batch, LISTEN/NOTIFY between instances.
        .target(
            name: "AlertdPostgres",
            dependencies: [
                "AlertdCore", "AlertdEngine", "AlertdReceipts", "AlertdWire", "AlertdVersion",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The only module that touches libmicrohttpd or raw pointers.
        .target(
            name: "AlertdHTTP",
            dependencies: [
                "CMicroHTTPD",
                .product(name: "Logging", package: "swift-log"),
                // NIOLockedValueBox: a plain pthread mutex for the locks every request takes.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The HTTP API: the route table and its handlers (decode, engine, encode), auth,
        // the anonymous host policy, problem+json, the dashboard's files.
        .target(
            name: "AlertdAPI",
            dependencies: [
                "AlertdAlertmanager", "AlertdCore", "AlertdEngine", "AlertdHTTP", "AlertdReceipts", "AlertdWire",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                // The OpenAPI document is YAML; the first request for it converts it to JSON.
                .product(name: "Yams", package: "Yams"),
            ],
            // The dashboard and the OpenAPI document (`OpenAPI/alertd.yaml`, a symlink to
            // `openapi/alertd.yaml`), compiled into the binary as byte arrays
            // (`PackageResources`): nothing needs to sit beside the executable.
            resources: [
                .embedInCode("Dashboard/index.html"), .embedInCode("Dashboard/dashboard.css"),
                .embedInCode("Dashboard/dashboard.js"), .embedInCode("Dashboard/icon.svg"),
                .embedInCode("Dashboard/sw.js"), .embedInCode("Dashboard/manifest.webmanifest"),
                .embedInCode("Dashboard/icon-192.png"), .embedInCode("Dashboard/icon-512.png"),
                .embedInCode("Dashboard/icon-maskable-512.png"), .embedInCode("Dashboard/apple-touch-icon.png"),
                .embedInCode("OpenAPI/alertd.yaml"),
            ]
        ),
        // The wiring: config, systemd, signals, metrics setup, reload and the service group.
        .target(
            name: "AlertdDaemon",
            dependencies: [
                "AlertdAlertmanager", "AlertdAPI", "AlertdDeliveryWorker", "AlertdCore", "AlertdDelivery", "AlertdEngine", "AlertdHTTP",
                "AlertdPostgres", "AlertdReceipts",
                "AlertdSQLite", "AlertdVersion", "AlertdWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // Callback delivery: retry policy, deny list, event bodies.
        .target(
            name: "AlertdDelivery",
            dependencies: [
                "AlertdCore", "AlertdWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Web Push (SPEC §11), pure: RFC 8291 encryption, RFC 8292 VAPID, the subscription's keys
        // and the payloads a device decrypts. swift-crypto does every primitive.
        .target(
            name: "AlertdPush",
            dependencies: ["AlertdCore", "AlertdWire", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The delivery worker: sends due deliveries over AsyncHTTPClient and records each attempt.
        .target(
            name: "AlertdDeliveryWorker",
            dependencies: [
                "AlertdAlertmanager", "AlertdCore", "AlertdDelivery", "AlertdEngine", "AlertdWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // TLSConfiguration for https targets (a test's trust roots).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The Swift SDK: every endpoint typed, `present`, the webhook verifier for receivers.
        .target(
            name: "AlertdClient",
            dependencies: [
                "AlertdReceipts", "AlertdWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The SDK's test double: records presented alerts, answers as a test says.
        .target(
            name: "AlertdClientTesting",
            // AlertdCore for the daemon's own validation of an alert (one copy of the rules).
            dependencies: ["AlertdClient", "AlertdCore", "AlertdWire", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]),
        // `alertctl mcp`: a Model Context Protocol server on stdio whose tools ask people
        // questions through the SDK (docs/agents.md).
        .target(
            name: "AlertdMCP",
            dependencies: [
                "AlertdClient", "AlertdWire",
                .product(name: "MCP", package: "swift-sdk"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The command-line client, built on the SDK.
        .executableTarget(
            name: "alertctl",
            dependencies: [
                "AlertdClient", "AlertdMCP", "AlertdReceipts", "AlertdWire", "AlertdVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "alertd",
            dependencies: [
                "AlertdDaemon", "AlertdAPI", "AlertdPostgres", "AlertdReceipts", "AlertdVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "AlertdWireTests", dependencies: ["AlertdWire"]),
        .testTarget(
            name: "AlertdReceiptsTests",
            dependencies: ["AlertdReceipts", "AlertdWire", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(
            name: "AlertdMCPTests",
            dependencies: [
                "AlertdMCP", "AlertdClient", "AlertdWire", .product(name: "MCP", package: "swift-sdk"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        .testTarget(name: "AlertdCoreTests", dependencies: ["AlertdCore", "AlertdWire"]),
        .testTarget(name: "AlertdAlertmanagerTests", dependencies: ["AlertdAlertmanager", "AlertdCore", "AlertdWire"]),
        .testTarget(name: "AlertdEngineTests", dependencies: ["AlertdEngine", "AlertdCore", "AlertdWire"]),
        .testTarget(
            name: "AlertdDaemonTests",
            dependencies: [
                "AlertdDaemon", "AlertdAlertmanager", "AlertdCore", "AlertdReceipts", "AlertdTestSupport", "AlertdWire",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "AlertdSQLiteTests",
            dependencies: [
                "AlertdSQLite", "AlertdEngine", "AlertdCore", "AlertdWire", "AlertdTestSupport", "AlertdReceipts",
                // ControlledStore, the store wrapper of the in-process harness, around the group committer's store.
                "AlertdInProcess",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        .testTarget(
            name: "AlertdDeliveryTests", dependencies: ["AlertdDelivery", "AlertdCore", "AlertdWire", "AlertdClient", "AlertdTestSupport"]),
        .testTarget(
            name: "AlertdPushTests",
            dependencies: [
                "AlertdPush", "AlertdCore", "AlertdWire", "AlertdTestSupport", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "AlertdClientTests",
            dependencies: [
                "AlertdClient", "AlertdClientTesting", "AlertdWire", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        // Receipts signed by alertd's receipt code, for the Python tier that checks them with other
        // implementations (Tests/Receipts: cryptography's Ed25519, the rfc8785 package). Not shipped.
        .executableTarget(name: "receipts-sample", dependencies: ["AlertdReceipts", "AlertdWire"], path: "Tests/Receipts/ReceiptsSample"),
        // The example of examples/swift: a program that asks before deploying, tested with the double.
        .target(name: "DeployApproval", dependencies: ["AlertdClient"], path: "examples/swift/DeployApproval"),
        .executableTarget(
            name: "deploy-approval", dependencies: ["DeployApproval", "AlertdClient"], path: "examples/swift/deploy-approval"),
        .testTarget(
            name: "DeployApprovalTests", dependencies: ["DeployApproval", "AlertdClientTesting"], path: "examples/swift/Tests"),
        .testTarget(
            name: "AlertdAPITests",
            dependencies: [
                "AlertdAPI", "AlertdDaemon", "AlertdEngine", "AlertdDeliveryWorker", "AlertdCore", "AlertdHTTP", "AlertdSQLite",
                "AlertdWire",
                "AlertdClient", "AlertdInProcess", "AlertdReceipts", "AlertdTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The callback event's body, held to the OpenAPI document's webhooks section.
                "AlertdDelivery",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // Random valid alerts for the property that the renderer and the Wire types agree.
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // What the tests share: the `TestClient` protocol and its live implementation
        // (AsyncHTTPClient), the runner of the real binaries, a raw-socket client for bytes
        // no HTTP client sends, real webhook receivers (SwiftNIO) for the callback tests.
        .target(
            name: "AlertdTestSupport",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // https receivers, for the callback worker's TLS tests.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // TestPostgres' databases, made and reset without a psql per test.
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // PushDevice: a browser's keys and its decryption of a push.
                "AlertdWire", .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/AlertdTestSupport"
        ),
        // The one in-process harness: alertd opened and run as the daemon does (its services in
        // a ServiceGroup), answering through its HTTP handler without sockets; and a store
        // wrapper whose commits a test can watch, hold and fail. For every target that builds
        // alertd in process.
        .target(
            name: "AlertdInProcess",
            dependencies: [
                "AlertdAPI", "AlertdCore", "AlertdDaemon", "AlertdEngine", "AlertdHTTP", "AlertdSQLite", "AlertdTestSupport",
                "AlertdReceipts", "AlertdWire",
                // SQLiteWriteLock: SQLite's write lock held from a connection of its own.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/AlertdInProcess"
        ),
        .testTarget(
            name: "AlertdDeliveryWorkerTests",
            dependencies: [
                "AlertdReceipts",
                "AlertdDeliveryWorker", "AlertdCore", "AlertdDelivery", "AlertdEngine", "AlertdSQLite", "AlertdWire", "AlertdTestSupport",
                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The HTTP API's contract (§2–§4): one test body runs in process, through the
        // daemon's HTTP handler without sockets (the default: fast, nothing to start), or
        // live against the real binary (a representative subset always; all of it with
        // ALERTD_TEST_MODE=live). Its own target because it links the daemon's modules
        // in process and builds the binary for the live runs, which no unit tier does.
        .testTarget(
            name: "AlertdAPIContractTests",
            dependencies: [
                "AlertdReceipts",
                "alertd", "AlertdAPI", "AlertdDaemon", "AlertdEngine", "AlertdDeliveryWorker", "AlertdCore", "AlertdHTTP", "AlertdSQLite",
                "AlertdPostgres", "AlertdPush",
                "AlertdInProcess", "AlertdTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The store port's contract (AlertdEngine.AlertStore): one suite, run against
        // SQLite and against a real PostgreSQL; a store that breaks the contract fails it.
        .testTarget(
            name: "AlertdStorePortTests",
            dependencies: [
                "AlertdReceipts",
                "AlertdCore", "AlertdEngine", "AlertdInProcess", "AlertdPostgres", "AlertdSQLite", "AlertdTestSupport", "AlertdWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Only what needs the process: sockets and framing, signals, systemd, TLS, kill -9,
        // reload, limits and slow clients, the CLI and the dashboard.
        .testTarget(
            name: "AlertdEndToEndTests",
            dependencies: [
                "alertd", "alertctl", "AlertdMCP", "AlertdWire", "AlertdClient", "AlertdClientTesting", "AlertdTestSupport",
                "AlertdReceipts", "AlertdVersion",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
    ]
)

// The upcoming features a careful Swift 6 codebase turns on: existentials spelled
// `any`, imports internal unless a public API needs them (`public import`), and
// members visible only from modules a file imports itself.
// (Not the examples: they show code as an SDK user writes it, without these flags.)
for target in package.targets where target.type != .system && target.path?.hasPrefix("examples") != true {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"),
            .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("InternalImportsByDefault"),
        ]
}

// The libFuzzer harnesses of fuzz/ (fuzz/README.md) join the package only when
// ALERTD_FUZZ is set (`make fuzz`, `make fuzz-ci`), so no ordinary build sees them.
// On top of the ordinary debug build, alertd's own modules are rebuilt with
// libFuzzer's coverage and AddressSanitizer (LeakSanitizer included) and the
// harnesses linked with libFuzzer; the dependencies are not rebuilt (nor
// instrumented: libyaml and BoringSSL are fuzzed by their own projects). SwiftPM
// names a debug executable's entry point itself, which displaces libFuzzer's `main`,
// so each harness's main.swift hands over to libFuzzer (CLibFuzzer). lld links them
// (gold warns about every symbol of the AddressSanitizer runtime).
if Context.environment["ALERTD_FUZZ"] != nil {
    let harnesses: [(name: String, dependencies: [Target.Dependency])] = [
        // AlertdWire's strict JSON parser: any bytes.
        ("FuzzJSON", ["AlertdWire"]),
        // JSON, then AlertdCore's AlertDraft.validate, as POST /v1/clients/{client}/alerts does.
        ("FuzzAlertValidation", ["AlertdCore", "AlertdWire"]),
        // AlertdAlertmanager's reading of Alertmanager's webhook payload and its mapping to alerts.
        ("FuzzAlertmanager", ["AlertdAlertmanager", "AlertdCore", "AlertdWire"]),
        // AlertdAPI's route table, query checks and Host policy (internal: `@testable import`).
        ("FuzzRouter", ["AlertdAPI", "AlertdCore", "AlertdEngine", "AlertdHTTP", "AlertdWire"]),
        // AlertdDaemon's config loader: YAML text.
        ("FuzzConfig", ["AlertdDaemon"]),
        // AlertdClient's WebhookVerifier: secret, headers and body.
        ("FuzzWebhookVerifier", ["AlertdClient", "AlertdWire"]),
    ]
    let sanitizers = ["-sanitize=fuzzer,address"]
    for target in package.targets where target.type == .regular && target.name.hasPrefix("Alertd") {
        // A release build (`FUZZ_BUILD=release fuzz/run.sh`) stays testable for FuzzRouter.
        target.swiftSettings =
            (target.swiftSettings ?? []) + [
                .unsafeFlags(sanitizers), .unsafeFlags(["-enable-testing"], .when(configuration: .release)),
            ]
    }
    package.targets.append(.target(name: "CLibFuzzer", path: "fuzz/Sources/CLibFuzzer"))
    for harness in harnesses {
        package.targets.append(
            .executableTarget(
                name: harness.name, dependencies: harness.dependencies + ["CLibFuzzer"], path: "fuzz/Sources/\(harness.name)",
                swiftSettings: [.unsafeFlags(sanitizers)], linkerSettings: [.unsafeFlags(sanitizers + ["-use-ld=lld"])]))
    }
}

// `make test-sanitizers` (scripts/test-sanitizers.sh) sets ALERTD_SANITIZE to `address`
// or `thread`: on top of the ordinary debug build, every Swift target of this package
// (alertd's modules, alertd and alertctl, the examples and the tests) is rebuilt
// instrumented, and every product it goes into links the sanitizer's runtime. The
// dependencies are not rebuilt, nor instrumented: a build of everything instrumented
// (`SANITIZE_DEPENDENCIES=1`, `swift test --sanitize`, in a scratch path of its own)
// took ~25 min of two cores for each sanitizer, which CI cannot afford (README,
// Development). What is not instrumented is not checked, and cannot report: memory
// errors inside NIO or GRDB, and races among their own threads; their locks are still
// seen (the runtime intercepts pthread's), so their handovers to alertd's code are.
if let sanitizer = Context.environment["ALERTD_SANITIZE"] {
    precondition(["address", "thread"].contains(sanitizer), "ALERTD_SANITIZE is address or thread, not \(sanitizer)")
    let flags = ["-sanitize=\(sanitizer)"]
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(flags)]
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(flags)]
    }
}
