// RouseAPNs
