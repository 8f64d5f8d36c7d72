//! The scan's checks, in the order they run and are reported: id, what
//! it looks at, how its evidence is collected and judged.

use crate::collect::{self, Context};
use crate::evidence::{Evidence, ScanPlan};
use crate::judge::{self, Judged};

/// What a check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The positive control: the mirror answers.
    Control,
    /// What the sandbox is told (files, variables). A client
    /// configuration's doors are tried as well (`doors`): one that answers
    /// fails the check, one found unreachable is a notice, which counts
    /// only when the control passed.
    Told,
    /// What the sandbox can do: an attempt whose "unreachable" counts only
    /// when the control passed.
    Attempt,
}

pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub kind: Kind,
    pub collect: fn(&Context) -> Vec<Evidence>,
    pub judge: fn(&ScanPlan, &[Evidence]) -> Judged,
}

pub const CHECKS: &[Check] = &[
    Check {
        id: "C.mirror",
        title: "the mirror answers",
        kind: Kind::Control,
        collect: collect::mirror,
        judge: judge::mirror_control,
    },
    Check {
        id: "S.interfaces",
        title: "interfaces and addresses",
        kind: Kind::Told,
        collect: collect::interfaces,
        judge: judge::interfaces,
    },
    Check {
        id: "S.routes",
        title: "IPv4 and IPv6 routes reach only the mirror",
        kind: Kind::Told,
        collect: collect::routes,
        judge: judge::routes,
    },
    Check {
        id: "S.resolvers",
        title: "resolvers",
        kind: Kind::Told,
        collect: collect::resolvers,
        judge: judge::resolvers,
    },
    Check {
        id: "S.proxy-env",
        title: "proxy variables lead only to the mirror",
        kind: Kind::Told,
        collect: collect::proxy_env,
        judge: judge::proxy_env,
    },
    Check {
        id: "S.pip",
        title: "pip.conf and PIP_* lead only to the mirror",
        kind: Kind::Told,
        collect: collect::pip,
        judge: judge::client_config,
    },
    Check {
        id: "S.uv",
        title: "uv.toml and UV_* lead only to the mirror",
        kind: Kind::Told,
        collect: collect::uv,
        judge: judge::client_config,
    },
    Check {
        id: "S.npm",
        title: ".npmrc and npm_config_* lead only to the mirror",
        kind: Kind::Told,
        collect: collect::npm,
        judge: judge::client_config,
    },
    Check {
        id: "S.cargo",
        title: "cargo's config and CARGO_* lead only to the mirror, and hold no registry token",
        kind: Kind::Told,
        collect: collect::cargo,
        judge: judge::cargo_config,
    },
    Check {
        id: "S.hf",
        title: "HF_ENDPOINT and the Hugging Face client's settings lead only to the mirror, and hold no token",
        kind: Kind::Told,
        collect: collect::hf,
        judge: judge::hf_config,
    },
    Check {
        id: "S.go",
        title: "GOPROXY and go's env lead only to the mirror",
        kind: Kind::Told,
        collect: collect::go,
        judge: judge::client_config,
    },
    Check {
        id: "S.apt",
        title: "apt's sources and proxies lead only to the mirror",
        kind: Kind::Told,
        collect: collect::apt,
        judge: judge::client_config,
    },
    Check {
        id: "S.lockfiles",
        title: "lockfiles name only the mirror",
        kind: Kind::Told,
        collect: collect::lockfiles,
        judge: judge::lockfiles,
    },
    Check {
        id: "R.canary",
        title: "the canary is unreachable",
        kind: Kind::Attempt,
        collect: collect::canary,
        judge: judge::canary,
    },
    Check {
        id: "R.gateways",
        title: "the routes' gateways are unreachable",
        kind: Kind::Attempt,
        collect: collect::gateways,
        judge: judge::gateways,
    },
    Check {
        id: "R.metadata",
        title: "link-local metadata services are unreachable",
        kind: Kind::Attempt,
        collect: collect::metadata,
        judge: judge::metadata,
    },
    Check {
        id: "R.dns-public",
        title: "public registry names do not resolve",
        kind: Kind::Attempt,
        collect: collect::dns_public,
        judge: judge::dns_public,
    },
    Check {
        id: "R.dns-canary",
        title: "a unique name under the canary's zone gets no answer",
        kind: Kind::Attempt,
        collect: collect::dns_canary,
        judge: judge::dns_canary,
    },
    Check {
        id: "R.mirror-connect",
        title: "the mirror opens no CONNECT tunnel",
        kind: Kind::Attempt,
        collect: collect::mirror_connect,
        judge: judge::mirror_connect,
    },
    Check {
        id: "R.mirror-absolute",
        title: "the mirror forwards no absolute-form request",
        kind: Kind::Attempt,
        collect: collect::mirror_absolute,
        judge: judge::mirror_absolute,
    },
];

pub fn check(id: &str) -> Option<&'static Check> {
    CHECKS.iter().find(|c| c.id == id)
}
