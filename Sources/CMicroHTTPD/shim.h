// CMicroHTTPD: libmicrohttpd for Swift. Not API.
//
// Swift imports no C variadic function, so MHD_start_daemon is invisible to it.
// alertd_start_daemon is the one non-variadic entry point: every option travels
// in an MHD_OptionItem array passed through MHD_OPTION_ARRAY (as systemd's
// journal-remote does). Everything else is used straight from microhttpd.h.
#ifndef ALERTD_CMICROHTTPD_SHIM_H
#define ALERTD_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <microhttpd.h>

/// Implemented in Swift (AlertdHTTP): receives one formatted libmicrohttpd message.
void alertd_http_log(void *cls, const char *message);

/// MHD_OPTION_EXTERNAL_LOGGER target: formats the va_list, which Swift cannot
/// take in a C-convention closure, and hands the text to alertd_http_log.
static inline void alertd_mhd_logger(void *cls, const char *format, va_list arguments) {
    char message[512];
    vsnprintf(message, sizeof message, format, arguments);
    alertd_http_log(cls, message);
}

static inline intptr_t alertd_mhd_logger_address(void) {
    return (intptr_t)&alertd_mhd_logger;
}

static inline struct MHD_Daemon *alertd_start_daemon(unsigned int flags,
                                                     MHD_AcceptPolicyCallback accept_policy,
                                                     void *accept_policy_cls,
                                                     MHD_AccessHandlerCallback handler,
                                                     void *handler_cls,
                                                     const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, 0, accept_policy, accept_policy_cls, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// Connections a daemon holds now (MHD_get_daemon_info is variadic).
static inline unsigned int alertd_daemon_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

/// The daemon's epoll descriptor, readable while libmicrohttpd has work (external
/// polling with MHD_USE_EPOLL), or -1.
static inline int alertd_daemon_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info == NULL ? -1 : info->epoll_fd;
}

/// How long the daemon's loop may sleep, in milliseconds (-1: until an event):
/// the nearest connection timeout, or 0 when libmicrohttpd has data in hand.
static inline int alertd_daemon_timeout(struct MHD_Daemon *daemon) {
    MHD_UNSIGNED_LONG_LONG timeout;
    if (MHD_get_timeout(daemon, &timeout) != MHD_YES) return -1;
    return timeout > 0x7fffffffULL ? 0x7fffffff : (int)timeout;
}

/// A non-blocking, close-on-exec eventfd (a loop's wake-up), or -1.
static inline int alertd_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

/// Names the calling thread (15 bytes at most), as ps and gdb show it.
static inline void alertd_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/// Bytes the peer has sent on a TCP socket so far, or -1 when the kernel does not say.
/// tcpi_bytes_received (Linux 4.1+) sits at byte 128 of struct tcp_info in
/// <linux/tcp.h>, which cannot be included beside glibc's <netinet/tcp.h>; the
/// struct only ever grows at its end, so the offset is stable.
static inline long long alertd_tcp_bytes_received(int fd) {
    unsigned char info[256];
    socklen_t length = sizeof info;
    if (getsockopt(fd, 6 /* IPPROTO_TCP */, 11 /* TCP_INFO */, info, &length) != 0 || length < 136) return -1;
    unsigned long long value;
    memcpy(&value, info + 128, sizeof value);
    return (long long)value;
}

/// The connection's socket (MHD_get_connection_info is variadic).
static inline int alertd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/// The pointer the connection-notify callback stored for this connection (NULL if none).
static inline void *alertd_connection_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

#endif
