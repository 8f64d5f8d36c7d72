//! egress-http
