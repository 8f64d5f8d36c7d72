//! egress-artifacts
