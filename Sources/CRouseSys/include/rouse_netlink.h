// rtnetlink macros and flag combinations turned into functions (owned by the netlink binding).
// Kernel constants themselves are imported from the headers below; nothing here retypes a value.
#ifndef ROUSE_NETLINK_H
#define ROUSE_NETLINK_H
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_link.h>
#include <linux/if_addr.h>
#include <linux/fib_rules.h>
#include <linux/netconf.h>
#include <linux/nexthop.h>
#include <net/if_arp.h>
#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

/// `NLMSG_ALIGN(len)`.
static inline uint32_t rouse_nlmsg_align(uint32_t len) { return NLMSG_ALIGN(len); }
/// `RTA_ALIGN(len)`.
static inline uint32_t rouse_rta_align(uint32_t len) { return RTA_ALIGN(len); }
/// `RTNH_ALIGN(len)`.
static inline uint32_t rouse_rtnh_align(uint32_t len) { return RTNH_ALIGN(len); }
/// `NLA_TYPE_MASK`: strips NLA_F_NESTED / NLA_F_NET_BYTEORDER from an attribute type.
static inline uint16_t rouse_nla_type_mask(void) { return (uint16_t)(NLA_TYPE_MASK); }

/// `setns(fd, CLONE_NEWNET)` on the calling thread; returns -1 and sets errno on failure.
int rouse_setns_net(int fd);
/// `SO_RCVBUFFORCE` (needs CAP_NET_ADMIN) — exposed because glibc's Swift module may hide it.
int rouse_so_rcvbufforce(void);
/// `pthread_setname_np(pthread_self(), name)` (a GNU extension Swift's Glibc module does not show): names
/// the calling thread, truncated to the kernel's 15 bytes.
int rouse_set_thread_name(const char *name);
/// `ioctl(fd, request, argument)` with a pointer argument (the libc function is variadic); returns -1 and
/// sets errno on failure. The reachability tests attach to a `tun` device with it (`TUNSETIFF`).
int rouse_ioctl_pointer(int fd, unsigned long request, void *argument);
/// `TUNSETIFF`, `IFF_TUN` and `IFF_NO_PI` from <linux/if_tun.h>.
unsigned long rouse_tunsetiff(void);
short rouse_iff_tun_no_pi(void);
/// `IFF_LOWER_UP` and the `IF_OPER_*` states live in <linux/if.h>, which cannot share a module with
/// <net/if.h>; netlink.c includes it alone and returns the header's values.
uint32_t rouse_iff_lower_up(void);
/// `IF_OPER_UNKNOWN`.
uint8_t rouse_if_oper_unknown(void);
/// `IF_OPER_DOWN`.
uint8_t rouse_if_oper_down(void);
/// `IF_OPER_LOWERLAYERDOWN`.
uint8_t rouse_if_oper_lowerlayerdown(void);
/// `IF_OPER_DORMANT`.
uint8_t rouse_if_oper_dormant(void);
/// `IF_OPER_UP`.
uint8_t rouse_if_oper_up(void);
#endif
