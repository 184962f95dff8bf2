/*
 * mhd_baseline.c — the baseline for bench/run.sh.
 *
 * A minimal libmicrohttpd server configured the way alertd is (see
 * /work/shared/FIELD-NOTES.md): internal polling thread(s) in poll mode
 * (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL; NOT epoll, whose 0.9.75
 * loop can stall at 128 ready events), MHD_OPTION_THREAD_POOL_SIZE = the
 * thread count, an explicit MHD_OPTION_CONNECTION_LIMIT, bound to 127.0.0.1.
 *
 * Every request gets the same ~300-byte JSON body (Content-Type:
 * application/json): 201 for POST, 200 for anything else. POST bodies are
 * read and discarded. The response is queued on the SECOND access-handler
 * call: answering on the first call in 0.9.75 marks the request as
 * "discarded" and forces Connection: close, losing keep-alive.
 *
 * A response object is created and destroyed per request (buffer is
 * MHD_RESPMEM_PERSISTENT, so no copy), which is what a real handler does;
 * it is not a pre-built shared response.
 *
 * usage: mhd-baseline PORT [THREADS (default nproc)] [CONNECTION_LIMIT (default 30000)]
 *                     [CONNECTION_MEMORY_LIMIT bytes (default 0: libmicrohttpd's 32 KiB)]
 * Runs until SIGINT or SIGTERM. Prints "ready port=... threads=... connection_limit=..."
 * on stderr once listening.
 *
 * build: cc -O2 -Wall -o mhd-baseline mhd_baseline.c $(pkg-config --cflags --libs libmicrohttpd)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>

/* A plausible alert resource, about 300 bytes. */
static const char BODY[] =
    "{\"id\":\"01JDB0000000000000000BENCH\",\"client\":\"bench\",\"state\":\"displayed\","
    "\"position\":0,\"title\":\"Deploy build 4711?\",\"buttons\":[{\"title\":\"Deploy\","
    "\"style\":\"default\"},{\"title\":\"Cancel\",\"style\":\"cancel\"}],\"priority\":0,"
    "\"created_at\":\"2026-11-21T19:01:00.123Z\",\"decided_at\":null,"
    "\"expires_at\":\"2026-11-22T19:01:00.123Z\",\"result\":null}";

static int request_marker; /* *con_cls points here once the first call has happened */

static enum MHD_Result handler(void *cls, struct MHD_Connection *connection,
                               const char *url, const char *method,
                               const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
    (void)cls; (void)url; (void)version; (void)upload_data;
    if (*con_cls == NULL) {          /* first call: headers only; do not answer yet */
        *con_cls = &request_marker;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {    /* body chunk: discard */
        *upload_data_size = 0;
        return MHD_YES;
    }
    unsigned int status = strcmp(method, MHD_HTTP_METHOD_POST) == 0 ? MHD_HTTP_CREATED : MHD_HTTP_OK;
    struct MHD_Response *response = MHD_create_response_from_buffer(
        sizeof(BODY) - 1, (void *)BODY, MHD_RESPMEM_PERSISTENT);
    if (response == NULL)
        return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return ret;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 5) {
        fprintf(stderr, "usage: %s PORT [THREADS] [CONNECTION_LIMIT] [CONNECTION_MEMORY_LIMIT]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned int threads = argc >= 3 ? (unsigned int)atoi(argv[2]) : (unsigned int)(nproc > 0 ? nproc : 1);
    unsigned int conn_limit = argc >= 4 ? (unsigned int)atoi(argv[3]) : 30000;
    size_t mem_limit = argc >= 5 ? (size_t)strtoul(argv[4], NULL, 10) : 0;
    if (port <= 0 || port > 65535 || threads == 0 || conn_limit == 0) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }

    /* Handle SIGINT/SIGTERM in main only: block them before MHD starts threads. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, handler, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, conn_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)4096,
        /* 0 would be taken literally: pass the option only when it is set */
        mem_limit ? MHD_OPTION_CONNECTION_MEMORY_LIMIT : MHD_OPTION_END, mem_limit,
        MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "MHD_start_daemon failed (port %d in use?)\n", port);
        return 1;
    }
    fprintf(stderr, "ready port=%d threads=%u connection_limit=%u memory_limit=%zu mhd=%s\n",
            port, threads, conn_limit, mem_limit, MHD_get_version());

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {}
    fprintf(stderr, "signal %d: stopping\n", sig);
    MHD_stop_daemon(d);
    return 0;
}
