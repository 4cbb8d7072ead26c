// rtnetlink macros turned into functions (owned by the netlink binding).
#ifndef ROUSE_NETLINK_H
#define ROUSE_NETLINK_H
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_link.h>
#include <linux/if_addr.h>
#include <linux/fib_rules.h>
#include <net/if.h>
#endif
