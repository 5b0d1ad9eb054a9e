import Kafka

extension WorkerRuntime {
    /// How often `fleet_consumer_lag` is refreshed: an operator watching a burst arrive sees it
    /// within about a second.
    static var lagReportInterval: Duration { .seconds(1) }

    /// Reports each held partition's lag, `fleet_consumer_lag`: the partition's high watermark
    /// as the leader states it now, minus the offset this member last committed (or restored
    /// at; before either, the group's committed offset, else the low watermark).
    ///
    /// The high watermark is asked of the leader (`rd_kafka_query_watermark_offsets`) rather
    /// than taken from the consumer's cache, which only moves with fetch responses: while a
    /// partition is paused (restoring, rewinding) or its prefetch queue is full, the cache
    /// stands still and a burst arriving meanwhile read as no lag at all. Asking happens here,
    /// outside the fold's lock, so a slow leader delays this gauge and nothing else.
    func reportLag(core: FoldCore<P>, consumer: any LogConsumer) async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: Self.lagReportInterval)
            let bases = await core.lagBases()
            if bases.isEmpty { continue }
            let unknown = bases.filter { $0.value == nil }.map(\.key)
            let groupCommitted = unknown.isEmpty ? [:] : ((try? await consumer.committed(unknown, timeout: .seconds(2))) ?? [:])
            var lags: [TopicPartition: Int64] = [:]
            for (partition, base) in bases {
                guard let marks = try? await consumer.queryWatermarks(partition, timeout: .seconds(2)) else { continue }
                let from = base ?? groupCommitted[partition] ?? marks.low
                lags[partition] = max(0, marks.high - from)
            }
            await core.publishLag(lags)
        }
    }
}
