//! egress-transcript
