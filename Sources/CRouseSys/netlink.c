#define _GNU_SOURCE
#include "rouse_netlink.h"
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>

int rouse_setns_net(int fd) { return setns(fd, CLONE_NEWNET); }

int rouse_so_rcvbufforce(void) { return SO_RCVBUFFORCE; }

int rouse_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    return pthread_setname_np(pthread_self(), truncated);
}

int rouse_ioctl_pointer(int fd, unsigned long request, void *argument) { return ioctl(fd, request, argument); }

unsigned long rouse_tunsetiff(void) { return TUNSETIFF; }

short rouse_iff_tun_no_pi(void) { return IFF_TUN | IFF_NO_PI; }

uint32_t rouse_iff_lower_up(void) { return IFF_LOWER_UP; }
uint8_t rouse_if_oper_unknown(void) { return IF_OPER_UNKNOWN; }
uint8_t rouse_if_oper_down(void) { return IF_OPER_DOWN; }
uint8_t rouse_if_oper_lowerlayerdown(void) { return IF_OPER_LOWERLAYERDOWN; }
uint8_t rouse_if_oper_dormant(void) { return IF_OPER_DORMANT; }
uint8_t rouse_if_oper_up(void) { return IF_OPER_UP; }
