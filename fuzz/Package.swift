// swift-tools-version:6.1
// libFuzzer harnesses for the code that parses untrusted bytes. Their own package,
// so the daemon's `swift build` and `swift test` never build them: `make fuzz`
// (fuzz/run.sh) builds them with `--sanitize=fuzzer --sanitize=address` in release
// mode and `-enable-testing`, which lets FuzzRouter reach AlertdAPI's internal
// router and query types through `@testable import` without making them public.
import PackageDescription

let package = Package(
    name: "alertd-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "alertd", path: "..")],
    targets: [
        // AlertdWire's strict JSON parser: any bytes.
        .executableTarget(name: "FuzzJSON", dependencies: [.product(name: "AlertdWire", package: "alertd")]),
        // JSON then AlertdCore's AlertDraft.validate, as POST /v1/clients/{client}/alerts does.
        .executableTarget(
            name: "FuzzAlertValidation",
            dependencies: [.product(name: "AlertdCore", package: "alertd"), .product(name: "AlertdWire", package: "alertd")]),
        // AlertdAPI's route table and query checks: method, path and query arguments.
        .executableTarget(
            name: "FuzzRouter",
            dependencies: [
                .product(name: "AlertdAPI", package: "alertd"), .product(name: "AlertdCore", package: "alertd"),
            ]),
        // AlertdDaemon's config loader: YAML text.
        .executableTarget(name: "FuzzConfig", dependencies: [.product(name: "AlertdDaemon", package: "alertd")]),
        // AlertdAlertmanager's reading of Alertmanager's webhook payload and its mapping to alerts.
        .executableTarget(
            name: "FuzzAlertmanager",
            dependencies: [
                .product(name: "AlertdAlertmanager", package: "alertd"), .product(name: "AlertdCore", package: "alertd"),
                .product(name: "AlertdWire", package: "alertd"),
            ]),
        // AlertdClient's WebhookVerifier: headers, body and secret.
        .executableTarget(
            name: "FuzzWebhookVerifier",
            dependencies: [.product(name: "AlertdClient", package: "alertd"), .product(name: "AlertdWire", package: "alertd")]),
    ]
)
