// RouseHTTP2
