//! The Hugging Face Hub: the canary upstream the tests and the suite put
//! in front of a Hub mirror, the caching proxy (B), the built-in pair and
//! the conformance kit.

pub mod builtin;
pub mod canary;
pub mod kit;
pub mod proxy;
