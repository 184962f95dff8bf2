/*
 * receiver.c — a webhook receiver for the callback benchmarks (bench/callbacks/).
 *
 * A libmicrohttpd server configured like bench/baseline/mhd_baseline.c (poll
 * mode, thread pool, explicit connection limit, keep-alive, answer on the
 * second handler call — see /work/shared/FIELD-NOTES.md). Every POST is
 * answered 204 with an empty body:
 *
 *   - at once (default);
 *   - after --delay-ms N: the connection is suspended and a timer thread
 *     resumes it N ms after the request arrived, so a slow answer holds no
 *     thread and never stops other connections being served;
 *   - --hold: never, until SIGUSR1, which answers every held request at once
 *     and switches the receiver to answering at once from then on.
 *
 * Per request it records, in memory: the arrival time (CLOCK_REALTIME, ns,
 * taken when the whole body has arrived), the time the answer was queued, the
 * `webhook-id` header, the alert id (the first "id" inside "alert":{ of the
 * body; for a Web Push, whose body is encrypted, its `Topic` header, with type
 * "push"), the event "type", the body size and, with --secret, whether the
 * `webhook-signature` header verifies (Standard Webhooks: v1,base64(HMAC-SHA256
 * of "id.timestamp.body")). The log is written on SIGTERM/SIGINT (then the
 * process exits) as tab-separated lines:
 *
 *   arrival_ns  answered_ns  webhook_id  alert_id  type  bytes  sig
 *
 * (sig: ok, bad or -). A summary line goes to stderr at exit:
 *   RESULT count=... first_ns=... last_ns=... rate=... max_inflight=... sig_bad=...
 *
 * GET /stats answers live counters as JSON (not recorded):
 *   {"count":N,"inflight":N,"max_inflight":N,"first_ns":N,"last_ns":N,"sig_bad":N,"mode":"..."}
 *
 * usage: receiver --port N [--threads N (2)] [--delay-ms N (0)] [--hold]
 *                 [--log PATH] [--secret S] [--connection-limit N (20000)]
 *
 * Prints "ready port=... mode=..." on stderr once listening. Exits on SIGTERM or
 * SIGINT after writing the log (without stopping libmicrohttpd: suspended
 * connections are simply closed by the exit).
 *
 * build: make -C bench/callbacks   (binary: bench/out/callbacks/receiver)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define MAX_BODY (256 * 1024)
#define WID_LEN 64
#define AID_LEN 40
#define TYPE_LEN 32

struct record {
    int64_t arrival_ns;
    int64_t answered_ns;
    uint32_t bytes;
    char sig;                 /* '-', 'o' ok, 'b' bad */
    char wid[WID_LEN];
    char aid[AID_LEN];
    char type[TYPE_LEN];
};

/* One request in flight. */
struct req {
    int is_post;
    int is_stats;
    int answered_phase;       /* 0: reading; 1: suspended; 2: resumed, answer now */
    size_t len, cap;
    char *body;
    size_t rec;               /* index in records */
    struct req *next;         /* in the timer queue */
    struct MHD_Connection *conn;
    int64_t due_ns;           /* CLOCK_MONOTONIC */
};

/* ---- settings ---- */
static int64_t delay_ns = 0;
static int hold = 0;
static unsigned char key[256];
static int key_len = -1;      /* -1: no --secret */

/* ---- records and counters (under rec_lock) ---- */
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct record *records;
static size_t nrec, caprec;
static long inflight, max_inflight, sig_bad;

/* ---- timer queue (FIFO: every request waits the same delay) ---- */
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static struct req *q_head, *q_tail;
static long q_len;

static int64_t now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Finds "name" : "value" at or after from; copies value into out. Returns the
 * position after the value, or NULL. */
static const char *json_string_field(const char *from, const char *end, const char *name,
                                     char *out, size_t outcap) {
    size_t nl = strlen(name);
    const char *p = from;
    while (p < end) {
        const char *q = memmem(p, (size_t)(end - p), name, nl);
        if (q == NULL) return NULL;
        const char *r = skip_ws(q + nl, end);
        if (r < end && *r == ':') {
            r = skip_ws(r + 1, end);
            if (r < end && *r == '"') {
                r++;
                size_t i = 0;
                while (r < end && *r != '"' && i + 1 < outcap) out[i++] = *r++;
                out[i] = 0;
                return r;
            }
        }
        p = q + nl;
    }
    return NULL;
}

static void parse_body(const char *b, size_t n, struct record *rec) {
    const char *end = b + n;
    rec->aid[0] = 0;
    rec->type[0] = 0;
    json_string_field(b, end, "\"type\"", rec->type, sizeof rec->type);
    const char *a = memmem(b, n, "\"alert\"", 7);
    const char *from = b;
    if (a != NULL) {
        const char *r = skip_ws(a + 7, end);
        if (r < end && *r == ':') {
            r = skip_ws(r + 1, end);
            if (r < end && *r == '{') from = r;
        }
    }
    json_string_field(from, end, "\"id\"", rec->aid, sizeof rec->aid);
}

static char verify(struct MHD_Connection *c, const char *body, size_t n) {
    if (key_len < 0) return '-';
    const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "webhook-id");
    const char *ts = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "webhook-timestamp");
    const char *sig = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "webhook-signature");
    if (!id || !ts || !sig) return 'b';
    size_t il = strlen(id), tl = strlen(ts);
    char *msg = malloc(il + tl + 2 + n);
    if (msg == NULL) return 'b';
    memcpy(msg, id, il);
    msg[il] = '.';
    memcpy(msg + il + 1, ts, tl);
    msg[il + 1 + tl] = '.';
    memcpy(msg + il + tl + 2, body, n);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    HMAC(EVP_sha256(), key, key_len, (const unsigned char *)msg, il + tl + 2 + n, mac, &maclen);
    free(msg);
    char expect[128] = "v1,";
    EVP_EncodeBlock((unsigned char *)expect + 3, mac, (int)maclen);
    size_t el = strlen(expect);
    /* the header holds space-separated signatures */
    const char *p = sig;
    while (*p) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if ((size_t)(e - p) == el && memcmp(p, expect, el) == 0) return 'o';
        p = e;
    }
    return 'b';
}

static size_t add_record(struct MHD_Connection *c, struct req *r) {
    struct record rec;
    memset(&rec, 0, sizeof rec);
    rec.arrival_ns = now_ns(CLOCK_REALTIME);
    rec.bytes = (uint32_t)r->len;
    const char *wid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "webhook-id");
    snprintf(rec.wid, sizeof rec.wid, "%s", wid ? wid : "-");
    parse_body(r->body ? r->body : "", r->len, &rec);
    /* A Web Push (bench/push.py): the body is encrypted; its Topic header is the alert id. */
    const char *topic = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "topic");
    if (topic != NULL) {
        snprintf(rec.aid, sizeof rec.aid, "%s", topic);
        snprintf(rec.type, sizeof rec.type, "push");
    }
    rec.sig = verify(c, r->body ? r->body : "", r->len);
    pthread_mutex_lock(&rec_lock);
    if (nrec == caprec) {
        size_t nc = caprec ? caprec * 2 : 65536;
        struct record *nr = realloc(records, nc * sizeof *nr);
        if (nr == NULL) { pthread_mutex_unlock(&rec_lock); fprintf(stderr, "out of memory\n"); abort(); }
        records = nr;
        caprec = nc;
    }
    size_t idx = nrec++;
    records[idx] = rec;
    if (rec.sig == 'b') sig_bad++;
    pthread_mutex_unlock(&rec_lock);
    return idx;
}

static void mark_answered(size_t idx) {
    int64_t t = now_ns(CLOCK_REALTIME);
    pthread_mutex_lock(&rec_lock);
    records[idx].answered_ns = t;
    pthread_mutex_unlock(&rec_lock);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned int status, const char *body) {
    size_t n = body ? strlen(body) : 0;
    struct MHD_Response *resp = MHD_create_response_from_buffer(n, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
    if (resp == NULL) return MHD_NO;
    if (body) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
    (void)cls; (void)version;
    struct req *r = *con_cls;
    if (r == NULL) {            /* first call: headers only; never answer here (keep-alive) */
        r = calloc(1, sizeof *r);
        if (r == NULL) return MHD_NO;
        r->is_post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
        r->is_stats = strcmp(method, MHD_HTTP_METHOD_GET) == 0 && strcmp(url, "/stats") == 0;
        r->conn = c;
        *con_cls = r;
        if (r->is_post) {
            pthread_mutex_lock(&rec_lock);
            inflight++;
            if (inflight > max_inflight) max_inflight = inflight;
            pthread_mutex_unlock(&rec_lock);
        }
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        if (r->len + n > MAX_BODY) n = r->len < MAX_BODY ? MAX_BODY - r->len : 0;  /* keep a prefix */
        if (n > 0) {
            if (r->len + n > r->cap) {
                size_t nc = r->cap ? r->cap : 2048;
                while (nc < r->len + n) nc *= 2;
                char *nb = realloc(r->body, nc);
                if (nb == NULL) return MHD_NO;
                r->body = nb;
                r->cap = nc;
            }
            memcpy(r->body + r->len, upload_data, n);
            r->len += n;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->is_stats) {
        char buf[512];
        pthread_mutex_lock(&rec_lock);
        int64_t first = nrec ? records[0].arrival_ns : 0, last = nrec ? records[nrec - 1].arrival_ns : 0;
        snprintf(buf, sizeof buf,
                 "{\"count\":%zu,\"inflight\":%ld,\"max_inflight\":%ld,\"first_ns\":%" PRId64
                 ",\"last_ns\":%" PRId64 ",\"sig_bad\":%ld,\"held\":%ld,\"mode\":\"%s\"}",
                 nrec, inflight, max_inflight, first, last, sig_bad, q_len,
                 hold ? "hold" : (delay_ns ? "delay" : "immediate"));
        pthread_mutex_unlock(&rec_lock);
        return answer(c, MHD_HTTP_OK, buf);
    }
    if (!r->is_post)
        return answer(c, MHD_HTTP_NO_CONTENT, NULL);
    if (r->answered_phase == 0) {
        r->rec = add_record(c, r);
        pthread_mutex_lock(&q_lock);
        if (hold || delay_ns > 0) {
            /* suspend and enqueue under the same lock the timer resumes under */
            r->due_ns = hold ? INT64_MAX : now_ns(CLOCK_MONOTONIC) + delay_ns;
            r->answered_phase = 1;
            r->next = NULL;
            MHD_suspend_connection(c);
            if (q_tail) q_tail->next = r; else q_head = r;
            q_tail = r;
            q_len++;
            pthread_cond_signal(&q_cond);
            pthread_mutex_unlock(&q_lock);
            return MHD_YES;
        }
        pthread_mutex_unlock(&q_lock);
    }
    /* immediate, or resumed by the timer */
    mark_answered(r->rec);
    return answer(c, MHD_HTTP_NO_CONTENT, NULL);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    (void)cls; (void)c; (void)toe;
    struct req *r = *con_cls;
    if (r == NULL) return;
    if (r->is_post) {
        pthread_mutex_lock(&rec_lock);
        inflight--;
        pthread_mutex_unlock(&rec_lock);
    }
    free(r->body);
    free(r);
    *con_cls = NULL;
}

static void *timer_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&q_lock);
    for (;;) {
        while (q_head == NULL) pthread_cond_wait(&q_cond, &q_lock);
        int64_t now = now_ns(CLOCK_MONOTONIC);
        if (q_head->due_ns <= now) {
            struct req *r = q_head;
            q_head = r->next;
            if (q_head == NULL) q_tail = NULL;
            q_len--;
            r->answered_phase = 2;
            MHD_resume_connection(r->conn);
            continue;
        }
        if (q_head->due_ns == INT64_MAX) {
            pthread_cond_wait(&q_cond, &q_lock);
            continue;
        }
        /* condvar uses CLOCK_REALTIME by default: convert the monotonic due time */
        int64_t wait = q_head->due_ns - now;
        int64_t abs = now_ns(CLOCK_REALTIME) + wait;
        struct timespec ts = { .tv_sec = abs / 1000000000LL, .tv_nsec = abs % 1000000000LL };
        pthread_cond_timedwait(&q_cond, &q_lock, &ts);
    }
    return NULL;
}

static void release_all(void) {
    pthread_mutex_lock(&q_lock);
    hold = 0;
    delay_ns = 0;
    for (struct req *r = q_head; r; r = r->next) r->due_ns = 0;
    pthread_cond_signal(&q_cond);
    pthread_mutex_unlock(&q_lock);
}

static int write_log(const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) { perror(path); return -1; }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    fprintf(f, "# arrival_ns\tanswered_ns\twebhook_id\talert_id\ttype\tbytes\tsig\n");
    for (size_t i = 0; i < nrec; i++) {
        struct record *r = &records[i];
        fprintf(f, "%" PRId64 "\t%" PRId64 "\t%s\t%s\t%s\t%u\t%s\n", r->arrival_ns, r->answered_ns,
                r->wid, r->aid[0] ? r->aid : "-", r->type[0] ? r->type : "-", r->bytes,
                r->sig == 'o' ? "ok" : r->sig == 'b' ? "bad" : "-");
    }
    return fclose(f);
}

static void usage(const char *p) {
    fprintf(stderr, "usage: %s --port N [--threads N] [--delay-ms N | --hold] [--log PATH] "
                    "[--secret S] [--connection-limit N]\n", p);
    exit(2);
}

int main(int argc, char **argv) {
    int port = 0;
    unsigned int threads = 2, conn_limit = 20000;
    const char *log_path = NULL, *secret = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--port") == 0 && v) { port = atoi(v); i++; }
        else if (strcmp(a, "--threads") == 0 && v) { threads = (unsigned int)atoi(v); i++; }
        else if (strcmp(a, "--delay-ms") == 0 && v) { delay_ns = (int64_t)(atof(v) * 1e6); i++; }
        else if (strcmp(a, "--hold") == 0) { hold = 1; }
        else if (strcmp(a, "--log") == 0 && v) { log_path = v; i++; }
        else if (strcmp(a, "--secret") == 0 && v) { secret = v; i++; }
        else if (strcmp(a, "--connection-limit") == 0 && v) { conn_limit = (unsigned int)atoi(v); i++; }
        else usage(argv[0]);
    }
    if (port <= 0 || port > 65535 || threads == 0 || conn_limit == 0 || delay_ns < 0) usage(argv[0]);
    if (secret) {
        if (strncmp(secret, "whsec_", 6) == 0) {
            const char *b = secret + 6;
            size_t bl = strlen(b);
            unsigned char tmp[400];
            if (bl > 4 * (sizeof tmp / 3) - 4) { fprintf(stderr, "secret too long\n"); return 2; }
            int n = EVP_DecodeBlock(tmp, (const unsigned char *)b, (int)bl);
            if (n < 0) { fprintf(stderr, "bad base64 in secret\n"); return 2; }
            while (bl > 0 && b[bl - 1] == '=') { n--; bl--; }   /* DecodeBlock counts padding */
            if (n > (int)sizeof key) { fprintf(stderr, "secret too long\n"); return 2; }
            memcpy(key, tmp, (size_t)n);
            key_len = n;
        } else {
            size_t n = strlen(secret);
            if (n > sizeof key) { fprintf(stderr, "secret too long\n"); return 2; }
            memcpy(key, secret, n);
            key_len = (int)n;
        }
    }

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    /* Signals are handled in main only: block them before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    pthread_t timer;
    if (pthread_create(&timer, NULL, timer_main, NULL) != 0) { perror("pthread_create"); return 1; }

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                         MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, handler, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, conn_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)600,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
        MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "MHD_start_daemon failed (port %d in use?)\n", port);
        return 1;
    }
    fprintf(stderr, "ready port=%d threads=%u mode=%s delay_ms=%.3f verify=%s log=%s\n", port, threads,
            hold ? "hold" : (delay_ns ? "delay" : "immediate"), (double)delay_ns / 1e6,
            key_len >= 0 ? "yes" : "no", log_path ? log_path : "-");

    for (;;) {
        int sig = 0;
        if (sigwait(&sigs, &sig) != 0) continue;
        if (sig == SIGUSR1) {
            fprintf(stderr, "SIGUSR1: releasing %ld held requests, answering at once from now\n", q_len);
            release_all();
            continue;
        }
        break;
    }
    /* Stop counting: freeze the records under the lock for good. */
    pthread_mutex_lock(&rec_lock);
    int64_t first = nrec ? records[0].arrival_ns : 0, last = nrec ? records[nrec - 1].arrival_ns : 0;
    double span = (double)(last - first) / 1e9;
    int rc = 0;
    if (log_path) rc = write_log(log_path) == 0 ? 0 : 1;
    fprintf(stderr, "RESULT count=%zu first_ns=%" PRId64 " last_ns=%" PRId64 " span_s=%.3f rate=%.1f "
                    "max_inflight=%ld held_at_exit=%ld sig_bad=%ld log=%s\n",
            nrec, first, last, span, span > 0 ? (double)(nrec - 1) / span : 0.0, max_inflight, q_len,
            sig_bad, log_path ? log_path : "-");
    fflush(stderr);
    _exit(rc);   /* suspended connections may remain: do not MHD_stop_daemon */
}
