// Linux system headers the Glibc module does not export (epoll, eventfd, timerfd, inotify).
#ifndef ROUSE_SYS_H
#define ROUSE_SYS_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <netinet/tcp.h>
#include <spawn.h>

#include <sys/socket.h>
/// accept4(2) (needs _GNU_SOURCE, which the Glibc module does not define).
int rouse_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);

/// pipe2(fds, O_CLOEXEC): no child spawned meanwhile by another thread inherits either end.
int rouse_pipe_cloexec(int fds[2]);

/// Spawn attributes for a child in a new process group, with an empty signal mask and every signal at its
/// default disposition (the parent's blocked signals and ignored SIGPIPE must not leak into it).
int rouse_spawnattr_defaults(posix_spawnattr_t *attr);

/// posix_spawn of `path` in a new process group with `in_fd`, `out_fd`, `err_fd` as its fds 0, 1, 2, every
/// other descriptor closed (posix_spawn_file_actions_addclosefrom_np), default signal dispositions and an
/// empty signal mask. Returns 0 or an errno value; `*pid` is the child.
int rouse_spawn_piped(const char *path, char *const argv[], char *const envp[], int in_fd, int out_fd,
                      int err_fd, pid_t *pid);
#endif
