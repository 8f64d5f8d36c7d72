//! egress-snapshot
