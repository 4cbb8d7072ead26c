/// The bounded HTTP/1.1 parser lives in `RouseHTTP1` (shared with the HTTP/2 kernel's HTTP/1.1 connections); the
/// push API's code and tests keep reading it through this module.
@_exported import RouseHTTP1
