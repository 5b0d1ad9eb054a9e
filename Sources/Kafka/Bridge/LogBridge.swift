import CRdKafka
import Logging

/// librdkafka's own log lines (`%3|…|FAIL|rdkafka#consumer-1| …`), routed through swift-log
/// instead of printed raw on standard error.
///
/// librdkafka calls a client's `log_cb` from its internal threads (broker and main threads) as
/// well as from the thread that calls into it, so the callback keeps no state of its own: it
/// builds a `Logger` (a value; swift-log's handlers are safe to use from any thread) and logs
/// one line. A C callback cannot capture context, and the handle's opaque already belongs to
/// the client's other callbacks, so the label is fixed: `librdkafka`, with the client's name
/// and librdkafka's facility as metadata.
enum LogBridge {
    /// The logger's label for every librdkafka line.
    static let label = "librdkafka"

    /// Installs the bridge on `conf` (before `rd_kafka_new`, which takes the conf).
    static func install(on conf: OpaquePointer) {
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, text in
            let fac = facility.map { String(cString: $0) } ?? ""
            let message = text.map { String(cString: $0) } ?? ""
            let client = rk.flatMap { rd_kafka_name($0) }.map { String(cString: $0) } ?? ""
            let logger = Logger(label: LogBridge.label)
            logger.log(
                level: LogBridge.level(syslog: level, facility: fac), "\(message)",
                metadata: ["client": "\(client)", "facility": "\(fac)"])
        }
    }

    /// The swift-log level of a librdkafka line: librdkafka uses syslog levels (0 emergency …
    /// 7 debug). Connection failures (`FAIL`, and `ERROR` lines for the same events) are
    /// retried by librdkafka itself and reported by the caller when they matter (a tool's
    /// "cannot reach the brokers at …", a worker's readiness), so they are notices, not errors.
    static func level(syslog level: Int32, facility: String) -> Logger.Level {
        switch level {
        case ...2: return .critical
        case 3: return facility == "FAIL" || facility == "ERROR" ? .notice : .error
        case 4: return .warning
        case 5: return .notice
        case 6: return .info
        default: return .debug
        }
    }
}
