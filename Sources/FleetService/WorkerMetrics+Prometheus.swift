import FleetWorkers
public import Prometheus

extension WorkerMetrics {
    /// Metrics recorded into `registry`, the one `ProbeServer` exposes on `/metrics`, with the
    /// histogram buckets of `prometheusFactory(registry:)`.
    public convenience init(worker: String, registry: PrometheusCollectorRegistry) {
        self.init(worker: worker, factory: Self.prometheusFactory(registry: registry))
    }

    /// A swift-metrics factory over `registry` whose seconds histograms have buckets fit for
    /// what they measure. Executables may also hand it to `MetricsSystem.bootstrap` once.
    ///
    /// A registry fixes a histogram's buckets on first use and traps on a different set later,
    /// so every factory over one registry must come from here.
    public static func prometheusFactory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            MetricNames.commitLatency: HistogramBuckets.commitLatency,
            MetricNames.securityDeliveryLatency: HistogramBuckets.securityDeliveryLatency,
            MetricNames.timerLateness: HistogramBuckets.timerLateness,
        ]
        return factory
    }

    /// Upper bounds of the seconds histograms.
    public enum HistogramBuckets {
        /// 1 ms – 10 s: a transaction commit takes milliseconds; seconds mean a struggling broker.
        public static let commitLatency: [Duration] = [
            .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .microseconds(2_500_000), .seconds(5), .seconds(10),
        ]
        /// 10 ms – 60 s: SECURITY is delivered immediately (P-BUD-1), so anything past a few
        /// seconds is an incident worth alerting on.
        public static let securityDeliveryLatency: [Duration] = [
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
        ]
        /// 10 ms – 1 h: timers fire on the next record or tick of their partition, so lateness
        /// runs from a tick interval (1 s by default) up to an idle partition's long silences.
        public static let timerLateness: [Duration] = [
            .milliseconds(10), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5),
            .seconds(10), .seconds(30), .seconds(60), .seconds(300), .seconds(900), .seconds(1800), .seconds(3600),
        ]
    }
}
