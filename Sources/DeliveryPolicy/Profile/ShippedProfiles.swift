import Foundation

extension PolicyProfile {
    /// The YAML text of a shipped profile, for the parts of the fleet that read their own
    /// section of the same file (the upstream workers' `upstream:`).
    public static func shippedYAML(_ name: String) throws(ProfileError) -> String {
        guard shippedNames.contains(name),
              let url = Bundle.module.url(forResource: name, withExtension: "yaml", subdirectory: "Profiles"),
              let text = try? String(contentsOf: url, encoding: .utf8)
        else {
            throw ProfileError(field: "profile", problem: "no shipped profile '\(name)' (shipped: \(shippedNames.joined(separator: ", ")))")
        }
        return text
    }
}
