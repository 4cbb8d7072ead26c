// RouseNetlink
