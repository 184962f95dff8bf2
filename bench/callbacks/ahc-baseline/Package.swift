// swift-tools-version:6.1
// bench/callbacks/ahc-baseline: AsyncHTTPClient alone against the callback
// receiver, configured and called like alertd's delivery worker, as the
// ceiling alertd's delivery rate is compared with (bench/callbacks/README.md).
// Its own package, so the baseline never builds alertd, and alertd never builds it:
//   swift build -c release --package-path bench/callbacks/ahc-baseline --scratch-path .build-ahcbase
import PackageDescription

let package = Package(
    name: "ahc-baseline",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // Already in the graph through AsyncHTTPClient; named for NIOCore/NIOHTTP1's types.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "ahc-baseline",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        )
    ]
)
