#ifndef CRDKAFKA_SHIM_H
#define CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/*
 * rd_kafka_producev is variadic and therefore not callable from Swift. This
 * wrapper fixes the argument list we use.
 *
 * Ownership: key and value are copied (RD_KAFKA_MSG_F_COPY). On success the
 * headers object (may be NULL) is owned by librdkafka; on failure it is still
 * owned by the caller, who must destroy it.
 * partition < 0 means RD_KAFKA_PARTITION_UA (the configured partitioner).
 * timestamp 0 means "now" (librdkafka's CreateTime).
 */
static inline rd_kafka_resp_err_t crdk_produce(rd_kafka_t *rk,
                                               const char *topic,
                                               int32_t partition,
                                               const void *key, size_t key_len,
                                               const void *value, size_t value_len,
                                               rd_kafka_headers_t *headers,
                                               int64_t timestamp,
                                               void *opaque) {
    return rd_kafka_producev(rk,
                             RD_KAFKA_V_TOPIC(topic),
                             RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_KEY((void *)key, key_len),
                             RD_KAFKA_V_VALUE((void *)value, value_len),
                             RD_KAFKA_V_HEADERS(headers),
                             RD_KAFKA_V_TIMESTAMP(timestamp),
                             RD_KAFKA_V_OPAQUE(opaque),
                             RD_KAFKA_V_END);
}

#endif
