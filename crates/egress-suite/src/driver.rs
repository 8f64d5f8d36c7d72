//! One run's collection, for any protocol: walk its table phase by phase in
//! the order the protocol gives ([`Suite::PHASES`]), each phase's entries by
//! `order`, and record each sub-probe's evidence. Controls are judged as they
//! come; a target that serves none of [`Suite::SERVING`] is not probed
//! further. The records come back in table order, not yet judged.

use crate::collect::{token, Collector, Evidence};
use crate::facts::ControlFacts;
use crate::plan::{Plan, Upstream};
use crate::subprobe::{Collect, Phase, SubProbe, SubProbeId, Suite};
use crate::verdicts::judge_controls;
use egress_model::{Observation, ProbeRecord, Status};
use egress_transcript::Client;

/// What a run talks to, besides its plan.
pub struct Wire<'a> {
    pub client: &'a Client,
    pub upstream: Option<&'a dyn Upstream>,
    pub allowed_signers: Option<Vec<u8>>,
}

pub fn record(id: SubProbeId, ev: Evidence) -> ProbeRecord {
    ProbeRecord {
        id: id.as_str().to_string(),
        status: Status::Inconclusive,
        reason: "not judged".into(),
        exchanges: ev.exchanges,
        observations: ev.observations,
    }
}

/// The entries of one phase, by their order.
fn phase<S: Suite>(p: Phase) -> Vec<&'static SubProbe<S>> {
    let mut entries: Vec<&SubProbe<S>> = S::TABLE.iter().filter(|s| s.phase == p).collect();
    entries.sort_by_key(|s| s.order);
    entries
}

/// Collects every sub-probe of `S` against the target; returns the plan (a
/// protocol may complete it from the controls) and the records, in table
/// order.
pub fn collect<S: Suite>(
    wire: &Wire,
    mut plan: Plan<S::Packages>,
) -> (Plan<S::Packages>, Vec<ProbeRecord>) {
    let run_mark = wire.upstream.map(|u| u.mark());
    let fresh = token();
    let mut records: Vec<ProbeRecord> = Vec::new();
    for sp in phase::<S>(Phase::Controls) {
        let facts = judge_controls::<S>(&plan, &mut records);
        S::discover(&mut plan, &records);
        let c = collector(wire, &plan, &fresh);
        let ev = match &sp.collect {
            Collect::Plain(f) => f(&c, &facts),
            Collect::AfterRecords(f) => f(&c, &facts, &records),
            // Nothing to bracket or to log before the run has begun.
            Collect::Bracket { .. } | Collect::UpstreamLog => Evidence::default(),
        };
        records.push(record(sp.id, ev));
    }
    let f = judge_controls::<S>(&plan, &mut records);
    if S::SERVING
        .iter()
        .all(|id| f.status(id.as_str()) != Status::Pass)
    {
        return finish::<S>(plan, records);
    }
    let c = collector(wire, &plan, &fresh);
    let alive = alive_target::<S>(&records);
    let gone = std::cell::Cell::new(false);
    let prove = |ev: &mut Evidence| prove_alive(&c, alive.as_deref(), &gone, ev);
    for &p in S::PHASES.iter().filter(|p| **p != Phase::Controls) {
        let entries = phase::<S>(p);
        let mut brackets = Vec::new();
        for sp in &entries {
            if let Collect::Bracket { before, after } = &sp.collect {
                brackets.push((sp.id, before(&c, &f), after));
            }
        }
        for sp in &entries {
            let ev = match &sp.collect {
                Collect::Plain(collect) => collect(&c, &f),
                Collect::AfterRecords(collect) => collect(&c, &f, &records),
                Collect::Bracket { .. } => continue,
                Collect::UpstreamLog => {
                    let mut ev = Evidence::default();
                    if let (Some(u), Some(m)) = (wire.upstream, run_mark) {
                        ev.observations.push(Observation::UpstreamLog {
                            window: "whole run".into(),
                            requests: u.requests_since(m),
                        });
                    }
                    ev
                }
            };
            let mut ev = ev;
            prove(&mut ev);
            records.push(record(sp.id, ev));
        }
        for (id, mut ev, after) in brackets {
            after(&c, &f, &mut ev);
            prove(&mut ev);
            records.push(record(id, ev));
        }
    }
    finish::<S>(plan, records)
}

/// The request of the first serving control that was answered 200: what
/// [`prove_alive`] asks for again.
fn alive_target<S: Suite>(records: &[ProbeRecord]) -> Option<String> {
    S::SERVING
        .iter()
        .filter_map(|id| records.iter().find(|r| r.id == id.as_str()))
        .flat_map(|r| &r.exchanges)
        .find(|ex| ex.status() == Some(200) && ex.request_method() == "GET")
        .map(egress_model::Exchange::request_target)
}

/// When a request of `ev` got no answer, asks for the control page again
/// and records it ([`Observation::Alive`]): judges count that silence as a
/// refusal only if the target still served then (the first `alive`
/// observation). If it did not, waits up to
/// [`COME_BACK_WITHIN`](crate::collect::COME_BACK_WITHIN) for the
/// target to serve again, and records the answer that showed it back as a
/// second `alive` observation, so that the sub-probes after a crash measure
/// a running target; once a target has not come back, it is not waited
/// for again (`gone`).
fn prove_alive<P>(
    c: &Collector<P>,
    target: Option<&str>,
    gone: &std::cell::Cell<bool>,
    ev: &mut Evidence,
) {
    let Some(target) = target else { return };
    if ev.exchanges.iter().all(|ex| ex.status().is_some()) {
        return;
    }
    let exchange = c
        .client
        .get("alive after the requests left unanswered", target, None);
    let served = exchange.status() == Some(200);
    ev.observations.push(Observation::Alive { exchange });
    if served || gone.get() {
        return;
    }
    let again = c.until_served(target, None, |ms| {
        format!("alive again, {ms} ms after it stopped answering")
    });
    if again.status() == Some(200) {
        ev.observations.push(Observation::Alive { exchange: again });
    } else {
        gone.set(true);
    }
}

fn collector<'a, P>(wire: &'a Wire, plan: &'a Plan<P>, fresh: &'a str) -> Collector<'a, P> {
    Collector {
        client: wire.client,
        plan,
        upstream: wire.upstream,
        allowed_signers: wire.allowed_signers.clone(),
        fresh,
    }
}

/// Records every table entry that has no record yet, without evidence (they
/// judge as inconclusive), and puts the records in table order.
fn finish<S: Suite>(
    plan: Plan<S::Packages>,
    mut records: Vec<ProbeRecord>,
) -> (Plan<S::Packages>, Vec<ProbeRecord>) {
    for sp in S::TABLE {
        if !records.iter().any(|r| sp.id == r.id) {
            records.push(record(sp.id, Evidence::default()));
        }
    }
    records.sort_by_key(|r| {
        S::TABLE
            .iter()
            .position(|s| s.id == r.id)
            .unwrap_or(usize::MAX)
    });
    (plan, records)
}
