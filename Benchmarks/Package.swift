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
        // The root package's versions of these (RuntimeBenchmark runs the runtime as a service).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // The realistic mix, shared by the benchmark and the profiling executable.
        .target(
            name: "DeliveryWorkload",
            dependencies: [
                .product(name: "DeliveryPolicy", package: root),
                .product(name: "FleetModel", package: root),
                .product(name: "FleetTestSupport", package: root),
            ],
            path: "DeliveryWorkload"
        ),
        .executableTarget(
            name: "DeliveryEngineBenchmark",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "DeliveryWorkload",
            ],
            path: "DeliveryEngineBenchmark",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // One pass (or N) of the workload without the harness, for valgrind/perf.
        .executableTarget(
            name: "DeliveryEngineProfile",
            dependencies: ["DeliveryWorkload"],
            path: "DeliveryEngineProfile"
        ),
        // DeliveryState encoding for the changelog: JSONEncoder vs CanonicalJSONEncoder.
        .executableTarget(
            name: "StateCodecBenchmark",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "DeliveryPolicy", package: root),
                .product(name: "FleetModel", package: root),
                "DeliveryWorkload",
            ],
            path: "StateCodecBenchmark",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "StateCodecProfile",
            dependencies: [
                .product(name: "DeliveryPolicy", package: root),
                .product(name: "FleetModel", package: root),
                "DeliveryWorkload",
            ],
            path: "StateCodecProfile"
        ),
        // RecordCodec decode/encode throughput over a realistic record mix.
        .target(
            name: "RecordCodecWorkload",
            dependencies: [.product(name: "FleetModel", package: root)],
            path: "RecordCodecWorkload"
        ),
        .executableTarget(
            name: "RecordCodecBenchmark",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "RecordCodecWorkload",
            ],
            path: "RecordCodecBenchmark",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "RecordCodecProfile",
            dependencies: ["RecordCodecWorkload"],
            path: "RecordCodecProfile"
        ),
        // The delivery worker's fold without a broker (decode, step, bound checks, the records a
        // unit produces), for callgrind and a fold-only records/s.
        .executableTarget(
            name: "FoldProfile",
            dependencies: [
                "DeliveryWorkload",
                .product(name: "FleetWorkers", package: root),
                .product(name: "Kafka", package: root),
            ],
            path: "FoldProfile"
        ),
        // The delivery worker's whole runtime on the in-memory log (no broker, no librdkafka):
        // the Swift side of its CPU per input, and a profile of the runtime with nothing else
        // on the cores.
        .executableTarget(
            name: "RuntimeProfile",
            dependencies: [
                "DeliveryWorkload",
                .product(name: "FleetWorkers", package: root),
                .product(name: "FleetLogTesting", package: root),
                .product(name: "FleetService", package: root),
                .product(name: "Kafka", package: root),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "RuntimeProfile",
            // The workers' allocator (the root package's `fleetAllocator`).
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),
        // End-to-end: the delivery worker on the stateful runtime against a broker, records/s in
        // either guarantee and the restore rate; a plain executable (scripts/bench-runtime).
        .executableTarget(
            name: "RuntimeBenchmark",
            dependencies: [
                "DeliveryWorkload",
                .product(name: "FleetWorkers", package: root),
                .product(name: "FleetService", package: root),
                .product(name: "Kafka", package: root),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "RuntimeBenchmark",
            // The allocator the worker binaries link (the root package's `fleetAllocator`).
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),
        // Sends/s through the stand-in APNs (TLS + HTTP/2) with the sender's client (issue 17);
        // a plain executable printing RESULT lines.
        .executableTarget(
            name: "SenderBenchmark",
            dependencies: [
                .product(name: "ProviderClients", package: root),
                .product(name: "SenderTestSupport", package: root),
                .product(name: "SenderCore", package: root),
                .product(name: "FleetModel", package: root),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "SenderBenchmark"
        ),
    ],
    swiftLanguageModes: [.v6]
)
