import CRdKafka
import Logging

/// What librdkafka's callbacks reach through a client handle's opaque: at least the logger that
/// librdkafka's own lines about the client go to (`LogBridge`). A client whose other callbacks
/// need more subclasses it. The client keeps its context alive for as long as its handle.
class ClientContext: @unchecked Sendable {  // immutable here; subclasses are Sendable themselves
    let logger: Logger
    init(logger: Logger) { self.logger = logger }
}

/// Builds an `rd_kafka_conf_t` from properties, with `context` as the handle's opaque and
/// librdkafka's log lines routed through swift-log to its logger (`LogBridge`). The caller owns
/// the result until it is passed to `rd_kafka_new` (which takes ownership on success only), and
/// keeps `context` alive as long as the handle.
func makeRdKafkaConf(_ properties: [String: String], context: ClientContext) throws(KafkaError) -> OpaquePointer {
    guard let conf = rd_kafka_conf_new() else {
        throw KafkaError(RD_KAFKA_RESP_ERR__FAIL, detail: "rd_kafka_conf_new failed")
    }
    rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(context).toOpaque())
    LogBridge.install(on: conf)
    var errstr = [CChar](repeating: 0, count: 512)
    for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
        let result = rd_kafka_conf_set(conf, name, value, &errstr, errstr.count)
        if result != RD_KAFKA_CONF_OK {
            rd_kafka_conf_destroy(conf)
            throw KafkaError.invalidArgument("property \(name): \(errorText(errstr))")
        }
    }
    return conf
}

/// Creates a client handle from a conf (consumed on success and on failure).
func makeRdKafkaHandle(_ type: rd_kafka_type_t, conf: OpaquePointer) throws(KafkaError) -> OpaquePointer {
    var errstr = [CChar](repeating: 0, count: 512)
    guard let handle = rd_kafka_new(type, conf, &errstr, errstr.count) else {
        rd_kafka_conf_destroy(conf)
        throw KafkaError.invalidArgument("rd_kafka_new: \(errorText(errstr))")
    }
    return handle
}

/// librdkafka's handles are thread-safe; this wrapper lets them cross isolation domains.
struct RdKafkaHandle: @unchecked Sendable {
    let raw: OpaquePointer
}

/// Milliseconds for librdkafka timeouts, clamped to Int32.
func milliseconds(_ duration: Duration) -> Int32 {
    let (seconds, attoseconds) = duration.components
    let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
    return Int32(clamping: max(0, ms))
}

/// What is left of `deadline` for a call that makes several blocking librdkafka requests under
/// one timeout; a timeout error naming `what` once it has passed.
func remaining(until deadline: ContinuousClock.Instant, doing what: String) throws(KafkaError) -> Duration {
    let remaining = deadline - ContinuousClock.now
    guard remaining > .zero else { throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, detail: what) }
    return remaining
}

/// The text librdkafka wrote into an `errstr` buffer (NUL-terminated).
func errorText(_ buffer: [CChar]) -> String {
    let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
}
