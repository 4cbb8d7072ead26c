#include "rouse_netlink.h"
