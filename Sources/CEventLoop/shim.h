#ifndef TOOT_RELAY_CEVENTLOOP_SHIM_H
#define TOOT_RELAY_CEVENTLOOP_SHIM_H
// Linux interfaces the Swift Glibc module does not import: epoll, eventfd,
// signalfd, prctl, and two GNU extensions (accept4, pthread_setname_np) that are
// only declared under _GNU_SOURCE. Used by the EventLoop module only.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <unistd.h>

// GNU extensions: declared here because the Glibc module is not built with
// _GNU_SOURCE. The prototypes match glibc's exactly.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addr_len, int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);

// epoll/eventfd/signalfd flags are C enums or macros; typed constants keep
// the Swift side free of casts.
static inline uint32_t shim_EPOLLIN(void) { return EPOLLIN; }
static inline uint32_t shim_EPOLLOUT(void) { return EPOLLOUT; }
static inline uint32_t shim_EPOLLRDHUP(void) { return EPOLLRDHUP; }
static inline uint32_t shim_EPOLLHUP(void) { return EPOLLHUP; }
static inline uint32_t shim_EPOLLERR(void) { return EPOLLERR; }
static inline int shim_EPOLL_CLOEXEC(void) { return EPOLL_CLOEXEC; }
static inline int shim_EFD_NONBLOCK_CLOEXEC(void) { return EFD_NONBLOCK | EFD_CLOEXEC; }
static inline int shim_SFD_NONBLOCK_CLOEXEC(void) { return SFD_NONBLOCK | SFD_CLOEXEC; }
static inline int shim_SOCK_NONBLOCK_CLOEXEC(void) { return SOCK_NONBLOCK | SOCK_CLOEXEC; }

// The epoll_event struct is packed on x86_64; building and reading it in C
// keeps Swift away from the unaligned union member.
static inline void shim_epoll_event_set(struct epoll_event *event, uint32_t events, uint64_t token) {
    event->events = events;
    event->data.u64 = token;
}
static inline uint32_t shim_epoll_event_events(const struct epoll_event *event) { return event->events; }
static inline uint64_t shim_epoll_event_token(const struct epoll_event *event) { return event->data.u64; }

// The child's side of `spawnChildDyingWithParent` (ChildProcess.swift), in
// C so that nothing between fork and exec allocates or takes a lock (another
// thread of the parent may hold one): async-signal-safe calls only. prctl is
// variadic, which Swift cannot call. Returns the child's pid, or -1 (errno).
static inline pid_t shim_spawn_dying_with_parent(const char *path, char *const argv[], int standard_output,
                                                 int death_signal) {
    pid_t parent = getpid();
    pid_t child = fork();
    if (child != 0) return child;
    sigset_t none;
    sigemptyset(&none);
    if (dup2(standard_output, STDOUT_FILENO) < 0 || sigprocmask(SIG_SETMASK, &none, NULL) != 0
        || setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, (unsigned long)death_signal, 0UL, 0UL, 0UL) != 0) {
        _exit(127);
    }
    // A parent that died before prctl left the child to another: no signal would come.
    if (getppid() != parent) _exit(127);
    execv(path, argv);
    _exit(127);
}

#endif
