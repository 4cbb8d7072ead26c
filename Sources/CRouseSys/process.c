#define _GNU_SOURCE
#include "rouse_process.h"
#include "rouse_sys.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int rouse_spawn(const char *path, char *const argv[], char *const envp[], int channel_fd, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return rc;
    }
    int moved = -1;
    if (channel_fd == 3) {
        // dup2 onto itself would keep FD_CLOEXEC: move it out of the way first.
        moved = fcntl(channel_fd, F_DUPFD_CLOEXEC, 10);
        if (moved < 0) rc = errno;
        channel_fd = moved;
    }
    if (rc == 0 && channel_fd >= 0) rc = posix_spawn_file_actions_adddup2(&actions, channel_fd, 3);
    // Nothing else of the agent's reaches the child, whether or not it is close-on-exec (libcurl's sockets
    // are not): fds 0-2 and the channel only.
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, channel_fd >= 0 ? 4 : 3);
    if (rc == 0) rc = rouse_spawnattr_defaults(&attr);
    if (rc == 0) rc = posix_spawn(pid, path, &actions, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (moved >= 0) close(moved);
    return rc;
}

int rouse_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int rouse_pidfd_send_signal(int pidfd, int sig) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

int rouse_pidfd_poll(int pidfd, int timeout_ms) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct pollfd entry = {.fd = pidfd, .events = POLLIN};
        int rc = poll(&entry, 1, timeout_ms);
        if (rc >= 0) return rc > 0 ? 1 : 0;
        if (errno != EINTR) return -1;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (spent >= timeout_ms) return 0;
        timeout_ms -= (int)spent;
        start = now;
    }
}

int rouse_pidfd_wait(int pidfd, int *status) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    for (;;) {
        int rc = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED);
        if (rc == 0) break;
        if (errno == EINTR) continue;
        return -1;
    }
    if (info.si_code == CLD_EXITED) *status = info.si_status;
    else *status = 128 + info.si_status;
    return 0;
}

int rouse_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int rouse_peer_pidfd(int fd) {
    int pidfd = -1;
    socklen_t length = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) != 0) return -1;
    return pidfd;
}

pid_t rouse_pidfd_pid(int pidfd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    FILE *file = fopen(path, "re");
    if (file == NULL) return -1;
    char line[256];
    pid_t pid = -1;
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, "Pid:", 4) == 0) {
            pid = (pid_t)strtol(line + 4, NULL, 10);
            break;
        }
    }
    fclose(file);
    return pid;
}


int rouse_spawn_as(const char *path, char *const argv[], char *const envp[], int channel_fd, uid_t uid,
                         gid_t gid, const gid_t *groups, int group_count, pid_t *pid_out) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid < 0) {
        int error = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return error;
    }
    if (pid == 0) {
        setpgid(0, 0);
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = SIG_DFL;
        for (int sig = 1; sig < 65; sig++) sigaction(sig, &action, NULL);
        if (channel_fd == 3) {
            fcntl(3, F_SETFD, 0);
        } else if (channel_fd >= 0) {
            if (dup2(channel_fd, 3) < 0) _exit(126);
        }
        // Only 0-2 and the channel survive (close_range is async-signal-safe: a system call).
        if (syscall(SYS_close_range, channel_fd >= 0 ? 4U : 3U, ~0U, 0U) != 0) _exit(126);
        if (group_count > 0 ? setgroups((size_t)group_count, groups) != 0 : setgroups(1, &gid) != 0) _exit(126);
        if (setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
        // A root agent that dropped to another user must not be able to get back (setuid(0) fails).
        if (uid != 0 && setuid(0) == 0) _exit(126);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(path, argv, envp);
        _exit(127);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    *pid_out = pid;
    return 0;
}

int rouse_peer_groups(int fd, gid_t *groups, int *count) {
    socklen_t length = (socklen_t)(*count * (int)sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &length) != 0) return -1;
    *count = (int)(length / sizeof(gid_t));
    return 0;
}

int rouse_spawn_handler(const char *path, char *const argv[], char *const envp[], int channel_fd, int output_fd,
                        const int *cgroup_procs_fds, int cgroup_procs_count, int switch_identity, uid_t uid, gid_t gid, const gid_t *groups,
                        int group_count, int oom_score_adj, pid_t *pid_out) {
    char oom_text[16];
    int oom_length = oom_score_adj >= -1000 && oom_score_adj <= 1000 ? snprintf(oom_text, sizeof oom_text, "%d\n", oom_score_adj) : 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid < 0) {
        int error = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return error;
    }
    if (pid == 0) {
        // "0" moves the writing process: it is in its cgroups (v2, and the v1 pids and memory ones where the limits
        // are there) before any of the handler's code runs.
        for (int i = 0; i < cgroup_procs_count; i++) {
            if (cgroup_procs_fds[i] >= 0 && write(cgroup_procs_fds[i], "0\n", 2) != 2) _exit(126);
        }
        // Its OOM priority before it runs (and before it is another user, whose /proc files the agent cannot write):
        // not the agent's own (its unit's OOMScoreAdjust= would be inherited). Best effort: a kernel that refuses
        // leaves the inherited value.
        if (oom_length > 0) {
            int oom_fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
            if (oom_fd >= 0) {
                (void)!write(oom_fd, oom_text, (size_t)oom_length);
                close(oom_fd);
            }
        }
        setpgid(0, 0);
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = SIG_DFL;
        for (int sig = 1; sig < 65; sig++) sigaction(sig, &action, NULL);
        if (output_fd >= 0 && (dup2(output_fd, 1) < 0 || dup2(output_fd, 2) < 0)) _exit(126);
        if (channel_fd == 3) {
            fcntl(3, F_SETFD, 0);
        } else if (channel_fd >= 0) {
            if (dup2(channel_fd, 3) < 0) _exit(126);
        }
        if (syscall(SYS_close_range, channel_fd >= 0 ? 4U : 3U, ~0U, 0U) != 0) _exit(126);
        if (switch_identity) {
            if (group_count > 0 ? setgroups((size_t)group_count, groups) != 0 : setgroups(1, &gid) != 0) _exit(126);
            if (setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
            if (uid != 0 && setuid(0) == 0) _exit(126);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(path, argv, envp);
        _exit(127);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    *pid_out = pid;
    return 0;
}
