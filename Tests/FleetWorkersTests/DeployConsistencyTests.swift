import FleetModel
import FleetWorkers
import FleetService
import Foundation
import Testing

/// `deploy/` and the runbooks name environment variables and metrics by hand; these tests hold
/// them to the lists the workers are built from (`WorkerEnvironment.all`, `MetricNames.all`), so a
/// renamed variable or metric breaks the build of the docs, not a 3 a.m. page.
@Suite("deploy/ agrees with the workers")
struct DeployConsistencyTests {
    static let repository = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every text file under deploy/ plus the runbooks, by path relative to the repository.
    static func operatorFiles() throws -> [(path: String, text: String)] {
        let deploy = repository.appending(path: "deploy")
        guard let walker = FileManager.default.enumerator(at: deploy, includingPropertiesForKeys: [.isRegularFileKey]) else {
            throw DeployFilesMissing(path: deploy.path)
        }
        var files: [(String, String)] = []
        for case let url as URL in walker where (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
            files.append((String(url.path.dropFirst(repository.path.count + 1)), try String(contentsOf: url, encoding: .utf8)))
        }
        let runbooks = repository.appending(path: "docs/operations.md")
        files.append(("docs/operations.md", try String(contentsOf: runbooks, encoding: .utf8)))
        return files.sorted { $0.0 < $1.0 }
    }

    /// Whole words matching `pattern` in `text`.
    static func words(_ pattern: String, in text: String) throws -> Set<String> {
        let regex = try Regex(pattern)
        return Set(text.matches(of: regex).map { String(text[$0.range]) })
    }

    static let histogramSuffixes = ["_bucket", "_sum", "_count"]

    /// A metric name as exported: a histogram's series carry one of the suffixes.
    static func baseMetric(_ name: String) -> String {
        for suffix in histogramSuffixes where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if MetricNames.all.contains(base) { return base }
        }
        return name
    }

    @Test("every FLEET_ variable in deploy/ and the runbooks is one the workers read")
    func variablesAreRead() throws {
        let known = Set(WorkerEnvironment.all.map(\.name))
        var unknown: [String] = []
        for (path, text) in try Self.operatorFiles() {
            for name in try Self.words(#"\bFLEET_[A-Z_]*[A-Z]\b"#, in: text) where !known.contains(name) {
                unknown.append("\(path): \(name)")
            }
        }
        #expect(unknown.isEmpty, "not in WorkerEnvironment.all: \(unknown)")
    }

    @Test("every metric in deploy/ and the runbooks is one the workers export")
    func metricsAreExported() throws {
        let known = Set(MetricNames.all)
        var unknown: [String] = []
        for (path, text) in try Self.operatorFiles() {
            for name in try Self.words(#"\bfleet_[a-z_]*[a-z]\b"#, in: text) where !known.contains(Self.baseMetric(name)) {
                unknown.append("\(path): \(name)")
            }
        }
        #expect(unknown.isEmpty, "not in MetricNames.all: \(unknown)")
    }

    @Test("the dashboard shows every exported metric")
    func dashboardCoversMetrics() throws {
        let dashboard = try String(
            contentsOf: Self.repository.appending(path: "deploy/grafana/dashboards/retention-fleet.json"), encoding: .utf8)
        let shown = Set(try Self.words(#"\bfleet_[a-z_]*[a-z]\b"#, in: dashboard).map(Self.baseMetric))
        #expect(Set(MetricNames.all).subtracting(shown).isEmpty, "no panel for \(Set(MetricNames.all).subtracting(shown).sorted())")
    }

    @Test("every variable the workers read is documented in the README")
    func variablesAreDocumented() throws {
        let readme = try String(contentsOf: Self.repository.appending(path: "README.md"), encoding: .utf8)
        let undocumented = WorkerEnvironment.all.map(\.name).filter { !readme.contains("`\($0)`") }
        #expect(undocumented.isEmpty, "README.md does not mention \(undocumented)")
    }

    @Test("every worker runs in compose and on Kubernetes")
    func everyWorkerIsDeployed() throws {
        let compose = try String(contentsOf: Self.repository.appending(path: "deploy/compose.yaml"), encoding: .utf8)
        let prometheus = try String(contentsOf: Self.repository.appending(path: "deploy/prometheus/prometheus.yml"), encoding: .utf8)
        let kustomization = try String(contentsOf: Self.repository.appending(path: "deploy/k8s/base/kustomization.yaml"), encoding: .utf8)
        for worker in Worker.allCases.map(\.rawValue) {
            #expect(compose.contains("command: [\"\(worker)\"]"), "compose.yaml does not run \(worker)")
            #expect(prometheus.contains("\(worker):8080"), "prometheus.yml does not scrape \(worker)")
            #expect(kustomization.contains("workers/\(worker).yaml"), "the Kubernetes base has no \(worker)")
        }
    }
}

struct DeployFilesMissing: Error { var path: String }
