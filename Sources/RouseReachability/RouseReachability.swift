// RouseReachability
