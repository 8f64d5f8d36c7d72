//! One run of the suite against one target: collect every sub-probe's
//! evidence in its protocol's order, then judge it all with [`judge_all`].

use crate::driver::Wire;
use crate::plan::{Plan, Upstream};
use crate::protocol::{self, judge_all, Packages};
use crate::report::{LimitsRecord, Report, REPORT_SCHEMA};
use egress_transcript::Client;

pub struct Target<'a> {
    /// How the target is named in matrices.
    pub name: String,
    pub client: Client,
    pub plan: Plan<Packages>,
    pub upstream: Option<&'a dyn Upstream>,
    pub allowed_signers: Option<Vec<u8>>,
}

pub fn run(target: Target) -> Report {
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let wire = Wire {
        client: &target.client,
        upstream: target.upstream,
        allowed_signers: target.allowed_signers,
    };
    let (plan, mut records) = protocol::collect(&wire, &target.plan);
    let (predicates, outcome) = judge_all(&plan, &mut records);
    Report {
        schema: REPORT_SCHEMA.into(),
        tool: concat!("egress-conformance ", env!("CARGO_PKG_VERSION")).into(),
        target_name: target.name,
        started_unix,
        plan,
        limits: LimitsRecord::from(target.client.limits()),
        probes: records,
        predicates,
        outcome,
    }
}
