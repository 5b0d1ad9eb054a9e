import CRdKafka
import Logging

/// librdkafka's own log lines (`%3|…|FAIL|rdkafka#consumer-1| …`), routed through swift-log
/// instead of printed raw on standard error.
///
/// librdkafka calls a client's `log_cb` from its internal threads (broker and main threads) as
/// well as from the thread that calls into it. A C callback cannot capture context, so the line
/// goes to the logger of the client's `ClientContext`, reached through the handle's opaque: the
/// logger the client's creator passed in, like every other line about that client. The source
/// is `librdkafka`, with the client's name and librdkafka's facility as metadata.
enum LogBridge {
    /// The source of every librdkafka line.
    static let source = "librdkafka"

    /// Installs the bridge on `conf` (before `rd_kafka_new`, which takes the conf), whose opaque
    /// is a `ClientContext`.
    static func install(on conf: OpaquePointer) {
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, text in
            // librdkafka logs through a handle, so `rk` and its opaque are set; the handle is
            // destroyed before its context (each client's deinit).
            guard let rk, let opaque = rd_kafka_opaque(rk) else { return }
            let logger = Unmanaged<ClientContext>.fromOpaque(opaque).takeUnretainedValue().logger
            let fac = facility.map { String(cString: $0) } ?? ""
            let message = text.map { String(cString: $0) } ?? ""
            let client = rd_kafka_name(rk).map { String(cString: $0) } ?? ""
            logger.log(
                level: LogBridge.level(syslog: level, facility: fac), "\(message)",
                metadata: ["client": "\(client)", "facility": "\(fac)"], source: LogBridge.source)
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
