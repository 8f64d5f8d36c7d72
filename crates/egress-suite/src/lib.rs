//! egress-suite
