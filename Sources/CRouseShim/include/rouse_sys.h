// Linux system headers the Glibc module does not export (epoll, eventfd, timerfd).
#ifndef ROUSE_SYS_H
#define ROUSE_SYS_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <netinet/tcp.h>

#include <sys/socket.h>
/// accept4(2) (needs _GNU_SOURCE, which the Glibc module does not define).
int rouse_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
#endif
