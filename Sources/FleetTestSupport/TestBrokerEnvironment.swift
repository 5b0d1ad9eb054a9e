import Foundation

/// Where tests that need Kafka find the local broker (`FLEET_KAFKA_BOOTSTRAP`, set by
/// `eval "$(scripts/broker env)"`), and the one rule for when it is missing: outside CI those
/// tests are skipped with a loud banner; under `CI=true` they run and fail, so a CI machine
/// without a broker can never pass by skipping.
public enum TestBrokerEnvironment {
    public static var bootstrap: String? {
        ProcessInfo.processInfo.environment["FLEET_KAFKA_BOOTSTRAP"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The condition for a suite's `.enabled(if:)` trait; prints the banner (naming `suite`) when
    /// the suite is skipped.
    public static func isAvailable(for suite: String) -> Bool {
        if bootstrap != nil || isCI { return true }
        FileHandle.standardError.write(Data("""
            ****************************************************************************
            * \(suite): FLEET_KAFKA_BOOTSTRAP is not set — SKIPPING the broker tests.
            * Start a broker with: scripts/broker start && eval "$(scripts/broker env)"
            ****************************************************************************

            """.utf8))
        return false
    }
}
