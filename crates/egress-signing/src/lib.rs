//! egress-signing
