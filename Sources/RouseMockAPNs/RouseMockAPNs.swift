// RouseMockAPNs
