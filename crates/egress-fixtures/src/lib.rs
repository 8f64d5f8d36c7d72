//! egress-fixtures
