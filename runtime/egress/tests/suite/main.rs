//! The egress proxy's tests, one binary: CONNECT and forwarded requests, origins, refusals and
//! curl through the proxy, all on loopback.

mod proxy_support;

mod proxy_connect;
mod proxy_curl;
mod proxy_forward;
mod proxy_origins;
mod proxy_refusals;
