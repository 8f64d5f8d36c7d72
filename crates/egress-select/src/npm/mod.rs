//! npm: semver versions and ranges, and the platform fields (`os`, `cpu`, `libc`).
