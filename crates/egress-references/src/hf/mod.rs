//! The Hugging Face Hub: the canary upstream the tests and the suite put
//! in front of a Hub mirror.

pub mod canary;
