/*
 * mhd_durable.c - the durable-POST limit: what a C program on libmicrohttpd
 * and SQLite does at best for "accept a JSON alert, make it durable, answer".
 *
 *   POST <any path> -> body collected; the connection is suspended and the
 *                      request handed to one writer thread, which inserts a
 *                      batch of rows in one transaction (WAL,
 *                      synchronous=FULL: one fsync per batch = group commit),
 *                      then resumes each connection, answered 201 with a
 *                      ~600-byte JSON resource.
 *   GET  <any path> -> 200, ~600-byte JSON (for reference).
 *
 * No JSON parsing beyond a check for a "title" key: it is the floor under any
 * real implementation, not a competitor.
 *
 * Copied from the project's shared ../shared/bench/mhd_durable.c (only this paragraph added;
 * FIELD-NOTES, "The durable-POST floor"); bench/floor.sh builds and runs it.
 *
 * Usage: mhd_durable [--port P] [--threads N] [--db PATH] [--sync full|normal|off]
 * Build: cc -O2 -o mhd_durable mhd_durable.c $(pkg-config --cflags --libs libmicrohttpd sqlite3) -lpthread
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char RESOURCE[] =
  "{\"id\":\"01M84NFDCRB4D8GEMSNEXN2V87\",\"client\":\"bench\",\"state\":\"queued\",\"position\":1,"
  "\"title\":\"benchmark alert\",\"message\":\"peer benchmark\",\"style\":\"alert\","
  "\"buttons\":[{\"title\":\"Ok\",\"style\":\"default\"},{\"title\":\"Cancel\",\"style\":\"cancel\"}],"
  "\"priority\":0,\"expires_in\":86400,\"dismiss_after\":null,\"callback_url\":null,"
  "\"metadata\":{\"bench_id\":\"0123456789abcdef\"},\"created_at\":\"2026-11-21T21:05:58.131Z\","
  "\"displayed_at\":null,\"decided_at\":null,\"expires_at\":\"2026-11-22T21:05:58.131Z\",\"result\":null}";

struct req {
  size_t len, cap;
  char *buf;
  struct MHD_Connection *conn;
  struct req *next;
  int state; /* 0 headers, 1 body, 2 queued, 3 done, 4 bad */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct req *head = NULL, *tail = NULL;
static sqlite3 *db;
static sqlite3_stmt *ins;
static unsigned long long seq = 0, batches = 0, rows = 0;

static enum MHD_Result
reply (struct MHD_Connection *c, unsigned code, const char *body, size_t n)
{
  struct MHD_Response *r = MHD_create_response_from_buffer (n, (void *) body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header (r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response (c, code, r);
  MHD_destroy_response (r);
  return ret;
}

static void *
writer (void *arg)
{
  (void) arg;
  for (;;) {
    pthread_mutex_lock (&mu);
    while (head == NULL) pthread_cond_wait (&cv, &mu);
    struct req *batch = head;
    head = tail = NULL;
    pthread_mutex_unlock (&mu);
    sqlite3_exec (db, "BEGIN", 0, 0, 0);
    for (struct req *r = batch; r; r = r->next) {
      char id[32];
      snprintf (id, sizeof id, "a%020llu", ++seq);
      sqlite3_bind_text (ins, 1, id, -1, SQLITE_TRANSIENT);
      sqlite3_bind_text (ins, 2, "bench", -1, SQLITE_STATIC);
      sqlite3_bind_blob (ins, 3, r->buf, (int) r->len, SQLITE_STATIC);
      sqlite3_bind_int64 (ins, 4, (sqlite3_int64) time (NULL));
      if (sqlite3_step (ins) != SQLITE_DONE) fprintf (stderr, "insert: %s\n", sqlite3_errmsg (db));
      sqlite3_reset (ins);
      rows++;
    }
    if (sqlite3_exec (db, "COMMIT", 0, 0, 0) != SQLITE_OK) fprintf (stderr, "commit: %s\n", sqlite3_errmsg (db));
    batches++;
    for (struct req *r = batch, *nx; r; r = nx) {
      nx = r->next;
      r->state = 3;
      MHD_resume_connection (r->conn);
    }
  }
  return NULL;
}

static enum MHD_Result
handler (void *cls, struct MHD_Connection *c, const char *url, const char *method,
         const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
  (void) cls; (void) url; (void) version;
  struct req *r = *con_cls;
  if (r == NULL) {
    r = calloc (1, sizeof *r);
    r->conn = c;
    *con_cls = r;
    return MHD_YES;
  }
  if (method[0] == 'G') return reply (c, 200, RESOURCE, sizeof RESOURCE - 1);
  if (r->state == 3) return reply (c, 201, RESOURCE, sizeof RESOURCE - 1);
  if (r->state == 2) return MHD_YES;
  if (*upload_data_size != 0) {
    if (r->len + *upload_data_size > 65536) { r->state = 4; *upload_data_size = 0; return MHD_YES; }
    if (r->len + *upload_data_size > r->cap) {
      r->cap = (r->len + *upload_data_size) * 2;
      r->buf = realloc (r->buf, r->cap);
    }
    memcpy (r->buf + r->len, upload_data, *upload_data_size);
    r->len += *upload_data_size;
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (r->state == 4 || r->len == 0 || r->buf[0] != '{' || memmem (r->buf, r->len, "\"title\"", 7) == NULL)
    return reply (c, 400, "{\"code\":\"invalid-alert\"}", 24);
  r->state = 2;
  MHD_suspend_connection (c);
  pthread_mutex_lock (&mu);
  if (tail) tail->next = r; else head = r;
  tail = r;
  pthread_cond_signal (&cv);
  pthread_mutex_unlock (&mu);
  return MHD_YES;
}

static void
completed (void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
  (void) cls; (void) c; (void) toe;
  struct req *r = *con_cls;
  if (r) { free (r->buf); free (r); }
  *con_cls = NULL;
}

int
main (int argc, char **argv)
{
  int port = 18490, threads = 2;
  const char *path = "/tmp/mhd_durable.db", *sync = "full";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp (argv[i], "--port")) port = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--threads")) threads = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--db")) path = argv[i + 1];
    else if (!strcmp (argv[i], "--sync")) sync = argv[i + 1];
  }
  unlink (path);
  if (sqlite3_open (path, &db) != SQLITE_OK) { fprintf (stderr, "open failed\n"); return 1; }
  char pragma[64];
  snprintf (pragma, sizeof pragma, "PRAGMA synchronous=%s", sync);
  sqlite3_exec (db, "PRAGMA journal_mode=WAL", 0, 0, 0);
  sqlite3_exec (db, pragma, 0, 0, 0);
  sqlite3_exec (db, "CREATE TABLE alerts(id TEXT PRIMARY KEY, client TEXT, body BLOB, created INTEGER)", 0, 0, 0);
  sqlite3_exec (db, "CREATE INDEX alerts_client ON alerts(client, created)", 0, 0, 0);
  sqlite3_prepare_v2 (db, "INSERT INTO alerts VALUES(?,?,?,?)", -1, &ins, 0);
  pthread_t w;
  pthread_create (&w, NULL, writer, NULL);
  struct sockaddr_in sa;
  memset (&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons ((uint16_t) port);
  sa.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  struct MHD_Daemon *d = MHD_start_daemon (
    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME, (uint16_t) port, NULL, NULL,
    handler, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned) threads, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
    MHD_OPTION_CONNECTION_LIMIT, 20000u, MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &sa, MHD_OPTION_END);
  if (!d) { fprintf (stderr, "MHD_start_daemon failed\n"); return 1; }
  fprintf (stderr, "mhd_durable on 127.0.0.1:%d (sync %s, %d threads)\n", port, sync, threads);
  sigset_t s;
  sigemptyset (&s);
  sigaddset (&s, SIGINT);
  sigaddset (&s, SIGTERM);
  pthread_sigmask (SIG_BLOCK, &s, NULL);
  int sig;
  sigwait (&s, &sig);
  fprintf (stderr, "rows %llu batches %llu (%.1f per batch)\n", rows, batches, batches ? (double) rows / batches : 0);
  MHD_stop_daemon (d);
  return 0;
}
