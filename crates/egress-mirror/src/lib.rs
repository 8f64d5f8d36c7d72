//! egress-mirror
