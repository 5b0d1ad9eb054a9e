import FleetModel
import Yams

/// Why a profile's `sender:` section was refused, naming the field.
public struct SenderPolicyError: Error, CustomStringConvertible, Sendable, Hashable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension SenderPolicy {
    /// The `sender:` section of a policy profile (P-PROF-1: one file configures the whole fleet,
    /// so `fleetctl replay` rebuilds the sender exactly as it ran); absent, the seed's defaults.
    ///
    /// ```yaml
    /// sender:
    ///   max_tries: 3                # per device or address, the first included
    ///   max_age_minutes: 1440       # given up as `expired` after this long
    ///   base_backoff_ms: 30000      # first retry after half to all of this, doubling
    ///   max_backoff_ms: 1800000
    ///   answer_grace_seconds: 600
    ///   email_fallback_types: [fitcircle.weekly_digest, …]
    /// ```
    public static func load(profileYAML: String) throws(SenderPolicyError) -> SenderPolicy {
        let root: Node?
        do {
            root = try Yams.compose(yaml: profileYAML)
        } catch {
            throw SenderPolicyError("policy profile is not valid YAML: \(error)")
        }
        guard let top = root?.mapping else { return SenderPolicy() }
        guard let section = top["sender"] else { return SenderPolicy() }
        guard let fields = section.mapping else { throw SenderPolicyError("sender: must be a mapping") }
        let allowed: Set<String> = [
            "max_tries", "max_age_minutes", "base_backoff_ms", "max_backoff_ms", "answer_grace_seconds", "email_fallback_types",
        ]
        for key in fields.keys {
            guard let name = key.string, allowed.contains(name) else {
                throw SenderPolicyError("sender.\(key.string ?? "?"): unknown field (allowed: \(allowed.sorted().joined(separator: ", ")))")
            }
        }
        func int(_ name: String, _ range: ClosedRange<Int64>) throws(SenderPolicyError) -> Int64? {
            guard let node = fields[name] else { return nil }
            guard let text = node.scalar?.string, let value = Int64(text), range.contains(value) else {
                throw SenderPolicyError("sender.\(name): must be a whole number in \(range.lowerBound)–\(range.upperBound), got '\(node.scalar?.string ?? "?")'")
            }
            return value
        }
        var policy = SenderPolicy()
        if let tries = try int("max_tries", 1...20) { policy.maximumTries = Int(tries) }
        if let minutes = try int("max_age_minutes", 1...10_080) { policy.maximumAge = .minutes(minutes) }
        if let base = try int("base_backoff_ms", 1...3_600_000) { policy.baseBackoff = TimeSpan(milliseconds: base) }
        if let maximum = try int("max_backoff_ms", 1...86_400_000) { policy.maximumBackoff = TimeSpan(milliseconds: maximum) }
        if policy.maximumBackoff < policy.baseBackoff {
            throw SenderPolicyError("sender.max_backoff_ms: must be at least base_backoff_ms (\(policy.baseBackoff.milliseconds))")
        }
        if let grace = try int("answer_grace_seconds", 1...86_400) { policy.answerGrace = .seconds(grace) }
        if let node = fields["email_fallback_types"] {
            guard let sequence = node.sequence else { throw SenderPolicyError("sender.email_fallback_types: must be a list of notification types") }
            var types: Set<String> = []
            for item in sequence {
                guard let type = item.string, !type.isEmpty else {
                    throw SenderPolicyError("sender.email_fallback_types: every entry must be a non-empty notification type")
                }
                types.insert(type)
            }
            policy.emailFallbackTypes = types
        }
        return policy
    }
}
