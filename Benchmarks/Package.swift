// swift-tools-version: 6.1
import Foundation
import PackageDescription

// A path dependency's identity is its directory name, which differs between checkouts.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// Benchmarks of the delivery engine (ordo-one/benchmark). A package of its own so the main
// package and CI never build the benchmark toolchain. Run from this directory:
//   swift package --disable-sandbox benchmark --target DeliveryEngineBenchmark
let package = Package(
    name: "retention-fleet-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "DeliveryEngineBenchmark",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "DeliveryPolicy", package: root),
                .product(name: "FleetModel", package: root),
            ],
            path: "DeliveryEngineBenchmark",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
