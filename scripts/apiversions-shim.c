/*
 * apiversions-shim: a loopback TCP relay that lets librdkafka < 2.2 talk to Tansu.
 *
 * librdkafka before 2.2.0 mis-parses the optional tagged fields a broker may append to its
 * ApiVersions (v3+) response and fails the handshake ("Read underflow"). This relay forwards
 * every byte unchanged, except the response to the first request of each connection when that
 * request is ApiVersions v3 or later: it re-encodes that response without any tagged fields
 * (they are optional by definition, so dropping them loses nothing the client uses).
 *
 * Usage: apiversions-shim LISTEN_PORT UPSTREAM_PORT   (both on 127.0.0.1)
 * One thread per connection; runs until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define API_VERSIONS 18

static int upstream_port;

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Unsigned varint (Kafka's compact encodings). Returns bytes used, 0 on malformed input. */
static size_t read_uvarint(const uint8_t *p, size_t n, uint64_t *out) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 10; i++) {
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) { *out = v; return i + 1; }
    }
    return 0;
}

/* Skips a tagged-field section at p; returns its size, 0 on malformed input. */
static size_t skip_tags(const uint8_t *p, size_t n) {
    uint64_t count, tag, size;
    size_t at = read_uvarint(p, n, &count);
    if (!at) return 0;
    for (uint64_t i = 0; i < count; i++) {
        size_t u = read_uvarint(p + at, n - at, &tag);
        if (!u) return 0;
        at += u;
        u = read_uvarint(p + at, n - at, &size);
        if (!u || size > n - at - u) return 0;
        at += u + size;
    }
    return at;
}

/*
 * Re-encodes an ApiVersions v3+ response body (after the 4-byte correlation id) without tagged
 * fields. Layout: error_code i16, api_keys compact array of {key i16, min i16, max i16, tags},
 * throttle_time_ms i32, tags. Returns the new size written to out, or 0 if the body does not parse
 * (then the caller forwards it unchanged).
 */
static size_t strip_tags(const uint8_t *in, size_t n, uint8_t *out) {
    size_t at = 0, o = 0;
    uint64_t entries;
    if (n < 2) return 0;
    memcpy(out, in, 2); at = 2; o = 2;
    size_t u = read_uvarint(in + at, n - at, &entries);
    if (!u) return 0;
    memcpy(out + o, in + at, u); at += u; o += u;
    for (uint64_t i = 0; entries > 0 && i < entries - 1; i++) {
        if (n - at < 6) return 0;
        memcpy(out + o, in + at, 6); at += 6; o += 6;
        size_t t = skip_tags(in + at, n - at);
        if (!t) return 0;
        at += t;
        out[o++] = 0;
    }
    if (n - at < 4) return 0;
    memcpy(out + o, in + at, 4); at += 4; o += 4;
    size_t t = skip_tags(in + at, n - at);
    if (!t) return 0;
    out[o++] = 0;
    return o;
}

struct conn { int client; };

static void *relay(void *arg) {
    int client = ((struct conn *)arg)->client;
    free(arg);
    int upstream = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)upstream_port) };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(upstream, (struct sockaddr *)&addr, sizeof addr) != 0) goto done;

    /* The first request: read it whole to learn its api key and version, then forward it. */
    uint8_t len_buf[4];
    if (read_all(client, len_buf, 4)) goto done;
    uint32_t req_len = ntohl(*(uint32_t *)len_buf);
    uint8_t *req = malloc(req_len + 4);
    if (!req) goto done;
    memcpy(req, len_buf, 4);
    if (read_all(client, req + 4, req_len) || write_all(upstream, req, req_len + 4)) { free(req); goto done; }
    int rewrite = req_len >= 4 && ntohs(*(uint16_t *)(req + 4)) == API_VERSIONS && ntohs(*(uint16_t *)(req + 6)) >= 3;
    free(req);

    /* The first response: rewritten if it answers ApiVersions v3+. */
    if (read_all(upstream, len_buf, 4)) goto done;
    uint32_t resp_len = ntohl(*(uint32_t *)len_buf);
    uint8_t *resp = malloc(resp_len + 4);
    uint8_t *fixed = malloc(resp_len + 4);
    if (!resp || !fixed || read_all(upstream, resp + 4, resp_len)) { free(resp); free(fixed); goto done; }
    memcpy(resp, len_buf, 4);
    size_t body = rewrite && resp_len >= 4 ? strip_tags(resp + 8, resp_len - 4, fixed + 8) : 0;
    int rc;
    if (body) {
        memcpy(fixed + 4, resp + 4, 4); /* correlation id */
        *(uint32_t *)fixed = htonl((uint32_t)(body + 4));
        rc = write_all(client, fixed, body + 8);
    } else {
        rc = write_all(client, resp, resp_len + 4);
    }
    free(resp);
    free(fixed);
    if (rc) goto done;

    /* Everything else: plain relay in both directions. */
    uint8_t buf[65536];
    struct pollfd fds[2] = { { .fd = client, .events = POLLIN }, { .fd = upstream, .events = POLLIN } };
    for (;;) {
        if (poll(fds, 2, -1) < 0) { if (errno == EINTR) continue; break; }
        for (int i = 0; i < 2; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t r = recv(fds[i].fd, buf, sizeof buf, 0);
            if (r <= 0 || write_all(fds[1 - i].fd, buf, (size_t)r)) goto done;
        }
    }
done:
    close(upstream);
    close(client);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LISTEN_PORT UPSTREAM_PORT\n", argv[0]);
        return 2;
    }
    int listen_port = atoi(argv[1]);
    upstream_port = atoi(argv[2]);
    int server = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port) };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(server, (struct sockaddr *)&addr, sizeof addr) || listen(server, 128)) {
        perror("apiversions-shim: bind/listen");
        return 1;
    }
    for (;;) {
        int client = accept(server, NULL, NULL);
        if (client < 0) { if (errno == EINTR) continue; perror("accept"); continue; }
        struct conn *c = malloc(sizeof *c);
        if (!c) { close(client); continue; }
        c->client = client;
        pthread_t thread;
        if (pthread_create(&thread, NULL, relay, c)) { close(client); free(c); continue; }
        pthread_detach(thread);
    }
}
