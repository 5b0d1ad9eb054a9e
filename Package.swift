// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The modules a worker's fold runs through (the Kafka wrapper, records and codecs, state
/// images, the processors, the runtime). Release builds compile them with cross-module
/// optimization: their function bodies go into the module interface, so a caller in another
/// module inlines and specializes them (a record's decoder, the JSON writer, the engine's
/// step, the runtime's generic fold) instead of calling through unspecialized entry points
/// that copy, retain and release each value passed. `@inlinable` did that for the few
/// functions marked; this does it for every one. FoldProfile under callgrind (the fold alone,
/// 50 000 records, same digest): 3.676G -> 2.947G instructions (-20 %). Debug builds (the
/// tests) are unaffected.
let foldPath: [SwiftSetting] = strict + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]

/// The fleet's binaries allocate through jemalloc instead of glibc's malloc: linked ahead of
/// libc, it serves every allocation of the process (the Swift runtime's included). A fold
/// allocates and frees small buffers on every core at once (records, states, outputs), where
/// glibc's arenas spent ~12 % of the delivery worker's CPU; with jemalloc the worker uses ~20 %
/// less CPU per input (RuntimeBenchmark, docs/operations.md "Sizing"). Debian: libjemalloc-dev
/// to build, libjemalloc2 to run (deploy/runtime-packages.txt).
let fleetAllocator: [LinkerSetting] = [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]

let package = Package(
    name: "retention-fleet",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Kafka", targets: ["Kafka"]),
        .library(name: "FleetModel", targets: ["FleetModel"]),
        .library(name: "DeliveryPolicy", targets: ["DeliveryPolicy"]),
        .library(name: "UpstreamProcessors", targets: ["UpstreamProcessors"]),
        .library(name: "FleetSimulation", targets: ["FleetSimulation"]),
        .library(name: "SenderCore", targets: ["SenderCore"]),
        .library(name: "ProviderClients", targets: ["ProviderClients"]),
        .library(name: "SenderEffect", targets: ["SenderEffect"]),
        .library(name: "SenderTestSupport", targets: ["SenderTestSupport"]),
        .library(name: "FleetTestSupport", targets: ["FleetTestSupport"]),
        .library(name: "FleetLogTesting", targets: ["FleetLogTesting"]),
        .library(name: "FleetWorkers", targets: ["FleetWorkers"]),
        .library(name: "FleetService", targets: ["FleetService"]),
        .library(name: "FleetOperations", targets: ["FleetOperations"]),
        .executable(name: "fleetctl", targets: ["fleetctl"]),
        .executable(name: "score-worker", targets: ["score-worker"]),
        .executable(name: "sync-worker", targets: ["sync-worker"]),
        .executable(name: "reminder-worker", targets: ["reminder-worker"]),
        .executable(name: "access-worker", targets: ["access-worker"]),
        .executable(name: "delivery-worker", targets: ["delivery-worker"]),
        .executable(name: "sender-worker", targets: ["sender-worker"]),
        .executable(name: "provider-fakes", targets: ["provider-fakes"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
    ],
    targets: [
        // librdkafka from the system (Debian: librdkafka-dev).
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        // Our Swift wrapper over librdkafka: the only Kafka client in the fleet.
        .target(
            name: "Kafka",
            dependencies: [
                "CRdKafka",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: foldPath
        ),
        // Record formats, time, ids and the processor shape shared by every executable.
        .target(
            name: "FleetModel",
            dependencies: [.product(name: "HeapModule", package: "swift-collections")],
            swiftSettings: foldPath
        ),
        // The binary state images' schema (Protos/fleet_state.proto) and its generated code
        // (scripts/generate-protos; committed, never generated in the build).
        .target(
            name: "StateImages",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            // The generated messages keep their fields in a class (`_StorageClass`), and every
            // field access paid a dynamic exclusivity check (`swift_beginAccess`, ~1 % of the
            // delivery worker's CPU at the seal). The generated code only reaches that storage
            // through `_uniqueStorage()` and `withExtendedLifetime`, never overlapping.
            swiftSettings: foldPath + [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        // The delivery worker's decisions: pure engine + policy profiles.
        .target(
            name: "DeliveryPolicy",
            dependencies: [
                "FleetModel",
                "StateImages",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            resources: [.copy("Profiles")],
            swiftSettings: foldPath
        ),
        // The four upstream workers' decisions: pure processors.
        .target(
            name: "UpstreamProcessors",
            dependencies: [
                "FleetModel",
                "StateImages",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: foldPath
        ),
        // The sender's decisions (issue 17): devices, attempts, retries, fallback, receipts; a
        // pure fold like the others, and the provider payloads and answer meanings it relies on.
        .target(
            name: "SenderCore",
            dependencies: ["FleetModel", .product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),
        // The sender's effect stage: APNs (HTTP/2, ES256 provider JWT), FCM HTTP v1 (OAuth2 from a
        // service account, RS256 assertion) and a Resend-compatible email API. JWTs from jwt-kit,
        // HTTP/2 and TLS from async-http-client; no protocol written by hand.
        .target(
            name: "ProviderClients",
            dependencies: [
                "SenderCore",
                "FleetModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The sender's effect stage on Kafka: attempts in, provider calls, answers into the
        // sender's inbox in one transaction with the consumed offsets.
        .target(
            name: "SenderEffect",
            dependencies: [
                "Kafka",
                "FleetModel",
                "ProviderClients",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // Stand-in providers that speak the real protocols, for tests and the compose file: an
        // APNs fake over TLS + HTTP/2 that checks the provider JWT, an FCM fake with its token
        // endpoint, an email fake; and a test CA made on the spot.
        .target(
            name: "SenderTestSupport",
            dependencies: [
                "SenderCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strict
        ),
        // `fleetctl simulate`: the whole fleet's logic in one process over JSONL.
        .target(
            name: "FleetSimulation",
            dependencies: ["FleetModel", "DeliveryPolicy", "UpstreamProcessors", "SenderCore"],
            swiftSettings: strict
        ),
        // Seeded generators for test traffic and benchmark workloads (never used by the logic).
        .target(
            name: "FleetTestSupport",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // The stateful runtime every worker runs on (fold lanes, restore, ticks, pipelined
        // commits, DLQ, lifecycles) and the record formats it writes; no HTTP, no metrics
        // backend (it reports to a `RuntimeObserver`).
        .target(
            name: "FleetWorkers",
            dependencies: [
                "Kafka",
                "FleetModel",
                "UpstreamProcessors",
                "DeliveryPolicy",
                "SenderCore",
                "FleetSimulation",
                "StateImages",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: foldPath
        ),
        // An in-memory log behind the runtime's seam (`LogClients`): fast tests run the real
        // runtime on it, with crashes and rebalances at every step. Test code: never linked into
        // a worker executable.
        .target(
            name: "FleetLogTesting",
            dependencies: ["FleetWorkers", "Kafka"],
            swiftSettings: strict
        ),
        // The service around the runtime: a worker's process (configuration read at start,
        // service group, signals), its HTTP port (/healthz, /readyz, /metrics) and its metrics
        // (Prometheus). Only worker executables link it: the operator tools stay free of HTTP
        // and metrics.
        .target(
            name: "FleetService",
            dependencies: [
                "FleetWorkers",
                "Kafka",
                "FleetModel",
                "UpstreamProcessors",
                "DeliveryPolicy",
                "SenderCore",
                "FleetSimulation",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        // The operator tools behind fleetctl: explain, replay, export, DLQ redrive, partition
        // migration. Read the fleet's topics and re-run its processors; no worker links it.
        .target(
            name: "FleetOperations",
            dependencies: [
                "Kafka",
                "FleetModel",
                "FleetWorkers",
                "FleetSimulation",
                "DeliveryPolicy",
                "UpstreamProcessors",
                "SenderCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // The sender-worker's process: the runtime folding the sender's inbox and, in the same
        // service group, the effect stage calling the providers.
        .target(
            name: "SenderWorker",
            dependencies: [
                "FleetWorkers",
                "FleetService",
                "FleetModel",
                "Kafka",
                "ProviderClients",
                "SenderEffect",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The six workers' command lines: their own executables and the multi-call fleetctl of
        // the image (deploy/Dockerfile) share them.
        .target(
            name: "WorkerCommands",
            dependencies: [
                "FleetWorkers",
                "FleetService",
                "SenderWorker",
                "ProviderClients",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "fleetctl",
            dependencies: [
                "FleetOperations",
                "FleetWorkers",
                "FleetService",
                "FleetSimulation",
                "WorkerCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict,
            linkerSettings: fleetAllocator
        ),
        .executableTarget(
            name: "score-worker",
            dependencies: [
                "WorkerCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: fleetAllocator
        ),
        .executableTarget(
            name: "sync-worker",
            dependencies: [
                "WorkerCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: fleetAllocator
        ),
        .executableTarget(
            name: "reminder-worker",
            dependencies: [
                "WorkerCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: fleetAllocator
        ),
        .executableTarget(
            name: "access-worker",
            dependencies: [
                "WorkerCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: fleetAllocator
        ),
        .executableTarget(
            name: "delivery-worker",
            dependencies: [
                "WorkerCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: fleetAllocator
        ),
        .executableTarget(
            name: "sender-worker",
            dependencies: [
                "WorkerCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: fleetAllocator
        ),
        // The stand-in providers as a process (compose's `dev` image target, SenderBenchmark):
        // test code, so never part of fleetctl or the runtime image.
        .executableTarget(
            name: "provider-fakes",
            dependencies: [
                "SenderTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "FleetModelTests",
            dependencies: [
                "FleetModel",
                "FleetTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "FleetWorkersTests",
            dependencies: [
                "FleetWorkers", "FleetService", "FleetModel", "DeliveryPolicy", "UpstreamProcessors", "FleetTestSupport", "FleetSimulation",
                "SenderCore", "FleetLogTesting", "Kafka", "StateImages",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            // The state image corpus, read from the checkout (StateImageCorpusTests).
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "SenderTests",
            dependencies: [
                "SenderCore",
                "FleetModel",
                "ProviderClients",
                "SenderTestSupport",
                "SenderEffect",
                "Kafka",
                "FleetTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "KafkaTests",
            dependencies: ["Kafka", "FleetTestSupport"]
        ),
        .testTarget(
            name: "DeliveryPolicyTests",
            dependencies: [
                "DeliveryPolicy",
                "FleetSimulation",
                "FleetTestSupport",
                // The generated messages: the reference the directly written images are held to.
                "StateImages",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "UpstreamProcessorsTests",
            dependencies: [
                "UpstreamProcessors",
                "FleetSimulation",
                "FleetTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "FleetSimulationTests",
            dependencies: [
                "FleetSimulation",
                "FleetModel",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "FleetOperationsTests",
            dependencies: [
                "FleetOperations", "FleetModel", "FleetSimulation", "FleetTestSupport", "FleetWorkers", "Kafka",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Kafka", "FleetWorkers", "FleetService", "FleetModel", "UpstreamProcessors", "DeliveryPolicy", "FleetSimulation",
                "FleetTestSupport", "FleetOperations", "SenderCore", "SenderTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
