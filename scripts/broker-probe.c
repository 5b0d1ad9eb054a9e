/*
 * broker-probe: exits 0 once a librdkafka client (the system's, the one the project links)
 * completes the handshake with BOOTSTRAP and gets cluster metadata; prints the broker count.
 * Usage: broker-probe BOOTSTRAP [TIMEOUT_MS]
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BOOTSTRAP [TIMEOUT_MS]\n", argv[0]);
        return 2;
    }
    int timeout = argc > 2 ? atoi(argv[2]) : 3000;
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) ||
        rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof errstr)) {
        fprintf(stderr, "%s\n", errstr);
        return 2;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "%s\n", errstr);
        return 2;
    }
    const struct rd_kafka_metadata *md;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, timeout);
    int rc = 1;
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        printf("%d broker(s)\n", md->broker_cnt);
        rd_kafka_metadata_destroy(md);
        rc = 0;
    } else {
        fprintf(stderr, "metadata: %s\n", rd_kafka_err2str(err));
    }
    rd_kafka_destroy(rk);
    return rc;
}
