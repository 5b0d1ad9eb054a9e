import CRdKafka

/// The one error type of the Kafka module: librdkafka's error code, its symbolic name and the
/// human-readable message, plus librdkafka's own classification for transactional and fatal errors.
///
/// Callers branch on the classification, not on codes: a transactional producer retries a
/// `isRetriable` call, aborts the transaction on `requiresAbort`, and must be recreated (or the
/// worker restarted) on `isFatal` — fencing by a newer instance with the same transactional id is
/// reported as fatal.
public struct KafkaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// librdkafka's `rd_kafka_resp_err_t` value (negative for local errors, positive for broker errors).
    public let code: Int32
    /// librdkafka's symbolic name for `code`, e.g. `_TIMED_OUT` or `PRODUCER_FENCED`.
    public let name: String
    /// What went wrong, in librdkafka's words (or ours, for errors raised by this module).
    public let message: String
    /// The failed operation may succeed if simply retried.
    public let isRetriable: Bool
    /// The current transaction must be aborted (`abortTransaction`) before anything else.
    public let requiresAbort: Bool
    /// The client instance is unusable; create a new one (for a fenced producer: stop).
    public let isFatal: Bool
    /// For a failed `KafkaProducer.send` of several records: the position of the record that
    /// failed (the first, in record order), so the caller can tell which record — and which of
    /// its inputs — the broker refused.
    public internal(set) var recordIndex: Int? = nil

    public var description: String {
        var flags: [String] = []
        if isFatal { flags.append("fatal") }
        if requiresAbort { flags.append("abort required") }
        if isRetriable { flags.append("retriable") }
        let suffix = flags.isEmpty ? "" : " [\(flags.joined(separator: ", "))]"
        return "Kafka error \(name) (\(code)): \(message)\(suffix)"
    }

    /// How a transactional caller should react to this error.
    public enum Recovery: Sendable, Equatable {
        /// Recreate the client (or stop, when fenced).
        case fatal
        /// Abort the current transaction, then continue.
        case abortTransaction
        /// Retry the same call.
        case retry
        /// Nothing specific; treat as a failure of this call.
        case none
    }

    /// The recovery librdkafka prescribes; `fatal` wins over `abortTransaction` over `retry`.
    public var recovery: Recovery {
        if isFatal { return .fatal }
        if requiresAbort { return .abortTransaction }
        if isRetriable { return .retry }
        return .none
    }

    /// This producer was fenced: another instance with the same transactional id took over.
    public var isFenced: Bool {
        code == RD_KAFKA_RESP_ERR__FENCED.rawValue
            || code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED.rawValue
            || code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH.rawValue
    }

    /// The broker (or librdkafka, before sending) refused this one record for what it is — its
    /// size, its format — not for the state of the connection: producing it again fails the
    /// same way, so retrying the whole batch cannot help.
    public var isRecordSpecific: Bool {
        code == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE.rawValue
            || code == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE.rawValue
            || code == RD_KAFKA_RESP_ERR_INVALID_RECORD.rawValue
            || code == RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE.rawValue
            || code == RD_KAFKA_RESP_ERR_INVALID_MSG.rawValue
    }

    /// The operation did not finish within its timeout.
    public var isTimeout: Bool {
        code == RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue || code == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT.rawValue
    }

    /// No broker could be reached: refused or dropped connections, an unknown host name.
    public var isConnectionFailure: Bool {
        code == RD_KAFKA_RESP_ERR__TRANSPORT.rawValue || code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN.rawValue
            || code == RD_KAFKA_RESP_ERR__RESOLVE.rawValue
    }

    public init(code: Int32, name: String, message: String,
                isRetriable: Bool = false, requiresAbort: Bool = false, isFatal: Bool = false) {
        self.code = code
        self.name = name
        self.message = message
        self.isRetriable = isRetriable
        self.requiresAbort = requiresAbort
        self.isFatal = isFatal
    }

    /// An error from a bare response code; `detail` replaces librdkafka's generic text when given.
    init(_ err: rd_kafka_resp_err_t, detail: String? = nil, isFatal: Bool = false) {
        self.init(code: err.rawValue,
                  name: String(cString: rd_kafka_err2name(err)),
                  message: detail ?? String(cString: rd_kafka_err2str(err)),
                  isFatal: isFatal)
    }

    /// Takes ownership of an `rd_kafka_error_t` and destroys it.
    init(consuming error: OpaquePointer) {
        defer { rd_kafka_error_destroy(error) }
        self.init(code: rd_kafka_error_code(error).rawValue,
                  name: String(cString: rd_kafka_error_name(error)),
                  message: String(cString: rd_kafka_error_string(error)),
                  isRetriable: rd_kafka_error_is_retriable(error) != 0,
                  requiresAbort: rd_kafka_error_txn_requires_abort(error) != 0,
                  isFatal: rd_kafka_error_is_fatal(error) != 0)
    }

    /// Throws if `error` is non-nil (taking ownership of it).
    static func check(_ error: OpaquePointer?) throws(KafkaError) {
        if let error { throw KafkaError(consuming: error) }
    }

    /// Throws if `err` is not `NO_ERROR`.
    static func check(_ err: rd_kafka_resp_err_t, _ context: @autoclosure () -> String? = nil) throws(KafkaError) {
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
        if let context = context() {
            throw KafkaError(err, detail: "\(context): \(String(cString: rd_kafka_err2str(err)))")
        }
        throw KafkaError(err)
    }

    /// A misuse or invalid argument detected by this module.
    static func invalidArgument(_ message: String) -> KafkaError {
        KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, detail: message)
    }

    /// A wait that ran out of time, e.g. `readToEnd`.
    static func timedOut(_ message: String) -> KafkaError {
        KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, detail: message)
    }

    /// An operation on a client that was already closed.
    static func closed(_ what: String) -> KafkaError {
        KafkaError(RD_KAFKA_RESP_ERR__DESTROY, detail: "\(what) is closed")
    }
}
