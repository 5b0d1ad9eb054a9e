// swift-tools-version: 6.1
import PackageDescription

// libFuzzer harnesses, a package of their own so neither the main build nor CI builds them
// (scripts/fuzz-state-images builds them with -sanitize=fuzzer and runs them).
let package = Package(
    name: "fleet-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "retention-fleet", path: "..")],
    targets: [
        // Every state image decoder on arbitrary bytes: it must throw or decode, never trap,
        // and what it decodes must re-encode to an image that decodes to the same state.
        .executableTarget(
            name: "StateImageFuzzer",
            dependencies: [
                .product(name: "DeliveryPolicy", package: "retention-fleet"),
                .product(name: "UpstreamProcessors", package: "retention-fleet"),
                .product(name: "FleetModel", package: "retention-fleet"),
            ],
            path: "StateImageFuzzer",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
