// Process launch and tracking (posix_spawn, fork + setuid, pidfds) and Unix-socket peer credentials: libc only.
#ifndef ROUSE_PROCESS_H
#define ROUSE_PROCESS_H
#include <sys/types.h>

/// Spawns `argv[0]` (a path) with `envp` in a new process group, with `channel_fd` as fd 3 in the child (-1:
/// none) and every descriptor above it closed in the child (posix_spawn_file_actions_addclosefrom_np), whether
/// close-on-exec or not. Returns 0 and the pid, or an errno value.
int rouse_spawn(const char *path, char *const argv[], char *const envp[], int channel_fd, pid_t *pid);

/// Like rouse_spawn, but the child runs as `uid`/`gid` with the supplementary `groups` (none given: just
/// `gid`). glibc's posix_spawn has no credential attribute, so this forks and, in the child, only makes
/// async-signal-safe calls (setpgid, sigaction, dup2, close_range, setgroups, setgid, setuid, execve).
/// Returns 0 and the pid, or an errno value; a child that cannot switch identity exits with 126.
int rouse_spawn_as(const char *path, char *const argv[], char *const envp[], int channel_fd, uid_t uid,
                         gid_t gid, const gid_t *groups, int group_count, pid_t *pid);

/// Spawns a handler: forks; in the child (async-signal-safe calls only) joins each cgroup whose `cgroup.procs` is
/// open in `cgroup_procs_fds` (`cgroup_procs_count` of them, -1 entries skipped; a v2 group and v1 pids/memory
/// groups) before anything else, so that nothing the handler runs or forks starts
/// outside it; a new process group, default signal dispositions, `output_fd` as fds 1 and 2 (-1: kept),
/// `channel_fd` as fd 3, every other descriptor closed; with `switch_identity`, `uid`/`gid`/`groups` as in
/// rouse_spawn_as; `oom_score_adj` (-1000 to 1000; anything else: inherited) written to /proc/self/oom_score_adj
/// before the identity switch; then execve. Returns 0 and the pid, or an errno value; a child that cannot join its
/// cgroup, set up its descriptors or switch identity exits with 126.
int rouse_spawn_handler(const char *path, char *const argv[], char *const envp[], int channel_fd, int output_fd,
                        const int *cgroup_procs_fds, int cgroup_procs_count, int switch_identity, uid_t uid, gid_t gid, const gid_t *groups,
                        int group_count, int oom_score_adj, pid_t *pid_out);

/// pidfd_open(2); -1 with errno on failure.
int rouse_pidfd_open(pid_t pid);

/// pidfd_send_signal(2); -1 with errno on failure.
int rouse_pidfd_send_signal(int pidfd, int sig);

/// waitid(P_PIDFD, WEXITED) blocking: reaps the child; returns 0 and its status (exit code, or 128+signal).
int rouse_pidfd_wait(int pidfd, int *status);
/// Waits up to `timeout_ms` for the process behind `pidfd` to exit (the pidfd becomes readable):
/// 1 exited, 0 still running, -1 error (errno). EINTR is retried.
int rouse_pidfd_poll(int pidfd, int timeout_ms);

/// SO_PEERCRED of a connected Unix socket; -1 with errno on failure.
int rouse_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// SO_PEERPIDFD (Linux 6.5+) of a connected Unix socket: a pidfd or -1 with errno (ENOPROTOOPT before 6.5).
int rouse_peer_pidfd(int fd);

/// The pid a pidfd refers to (from /proc/self/fdinfo), or -1 when it exited or cannot be read.
pid_t rouse_pidfd_pid(int pidfd);

/// SO_PEERGROUPS (Linux 4.13+): the supplementary groups of a connected Unix socket's peer at connect time.
/// `*count` is the capacity on entry, the number filled on return; -1 with errno (ERANGE: too small).
int rouse_peer_groups(int fd, gid_t *groups, int *count);

#endif
