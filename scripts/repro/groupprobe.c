/* One member of a consumer group on two co-partitioned topics, printing every assignment
 * change with a timestamp: the minimal reproduction behind ScalingTests' notes on how the
 * local broker (Tansu) holds multi-member groups.
 *
 *   cc -O1 -o /tmp/groupprobe scripts/repro/groupprobe.c -lrdkafka
 *   /tmp/groupprobe BOOTSTRAP GROUP STRATEGY NAME [GROUP_INSTANCE_ID] TOPIC...
 *
 * STRATEGY is librdkafka's partition.assignment.strategy (range, roundrobin,
 * cooperative-sticky). SIGTERM closes the consumer (LeaveGroup unless static); SIGKILL is a
 * crash. Output: "<unix time> <name> assigned|revoked|lost <topic>[p] ..." */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop = 0;
static const char *name;
static void on_term(int sig) { (void)sig; stop = 1; }

/* Wall-clock seconds, so the lines of several members merge into one timeline. */
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void print(const char *what, rd_kafka_topic_partition_list_t *parts) {
    printf("%.3f %s %s", now(), name, what);
    for (int i = 0; i < parts->cnt; i++) printf(" %s[%d]", parts->elems[i].topic, parts->elems[i].partition);
    printf("\n");
    fflush(stdout);
}

static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque) {
    (void)opaque;
    int cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        print("assigned", parts);
        if (cooperative) rd_kafka_incremental_assign(rk, parts); else rd_kafka_assign(rk, parts);
    } else {
        print(rd_kafka_assignment_lost(rk) ? "lost" : "revoked", parts);
        if (cooperative) rd_kafka_incremental_unassign(rk, parts); else rd_kafka_assign(rk, NULL);
    }
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: %s BOOTSTRAP GROUP STRATEGY NAME INSTANCE|- TOPIC...\n", argv[0]); return 2; }
    name = argv[4];
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {
        {"bootstrap.servers", argv[1]}, {"group.id", argv[2]}, {"partition.assignment.strategy", argv[3]},
        {"client.id", argv[4]}, {"session.timeout.ms", "2000"}, {"heartbeat.interval.ms", "500"},
        {"max.poll.interval.ms", "10000"}, {"auto.offset.reset", "earliest"}, {"allow.auto.create.topics", "true"},
    };
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], err, sizeof err) != RD_KAFKA_CONF_OK) { fprintf(stderr, "%s\n", err); return 2; }
    if (strcmp(argv[5], "-") != 0 && rd_kafka_conf_set(conf, "group.instance.id", argv[5], err, sizeof err) != RD_KAFKA_CONF_OK) { fprintf(stderr, "%s\n", err); return 2; }
    rd_kafka_conf_set_rebalance_cb(conf, rebalance);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) { fprintf(stderr, "%s\n", err); return 2; }
    /* The topics, 4 partitions each (an existing topic is left alone). */
    rd_kafka_NewTopic_t *create[16];
    int ncreate = 0;
    for (int i = 6; i < argc && ncreate < 16; i++) create[ncreate++] = rd_kafka_NewTopic_new(argv[i], 4, 1, err, sizeof err);
    rd_kafka_queue_t *adminq = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, create, ncreate, NULL, adminq);
    rd_kafka_event_t *created = rd_kafka_queue_poll(adminq, 10000);
    if (created) rd_kafka_event_destroy(created);
    rd_kafka_queue_destroy(adminq);
    rd_kafka_NewTopic_destroy_array(create, ncreate);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(argc - 6);
    for (int i = 6; i < argc; i++) rd_kafka_topic_partition_list_add(topics, argv[i], RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    while (!stop) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m) rd_kafka_message_destroy(m);
    }
    printf("%.3f %s closing\n", now(), name);
    fflush(stdout);
    rd_kafka_consumer_close(rk);
    printf("%.3f %s closed\n", now(), name);
    fflush(stdout);
    rd_kafka_destroy(rk);
    return 0;
}
