//! Shared pieces of the judges. A judge is a pure function from a plan, the
//! control facts and a sub-probe's recorded evidence to a status and a
//! one-line reason; `report verify` calls exactly the same functions.

use crate::classify::{self, Answer};
use crate::facts::ControlFacts;
use crate::plan::Plan;
use egress_model::{Observation, ProbeRecord, Status, Url};

pub type Verdict = (Status, String);

/// What a judge of one protocol reads: its plan (packages `P`), its control
/// facts `F`, and the other records.
pub struct Judge<'a, P, F> {
    pub plan: &'a Plan<P>,
    pub facts: &'a F,
    /// Every record of the report, for the few judges that read another
    /// sub-probe's evidence (P5 reads the manifest's).
    pub records: &'a [ProbeRecord],
}

impl<P, F: ControlFacts> Judge<'_, P, F> {
    pub fn origin(&self) -> Option<Url> {
        self.plan.index().ok()
    }

    /// `Some(verdict)` when the control has not passed: a refusal cannot be
    /// trusted until the same route shape has been shown to serve content.
    pub fn require(&self, control: &str) -> Option<Verdict> {
        match self.facts.status(control) {
            Status::Pass => None,
            s => Some((
                Status::Inconclusive,
                format!("positive control {control} is {s}, so a refusal here proves nothing"),
            )),
        }
    }

    pub fn record(&self, id: &str) -> Option<&ProbeRecord> {
        self.records.iter().find(|r| r.id == id)
    }
}

pub fn pass(reason: impl Into<String>) -> Verdict {
    (Status::Pass, reason.into())
}
pub fn fail(reason: impl Into<String>) -> Verdict {
    (Status::Fail, reason.into())
}
pub fn inconclusive(reason: impl Into<String>) -> Verdict {
    (Status::Inconclusive, reason.into())
}
pub fn skipped(reason: impl Into<String>) -> Verdict {
    (Status::Skipped, reason.into())
}

/// How strict a refusal judge is about answers that are neither 2xx nor 4xx.
#[derive(Clone, Copy)]
pub struct Strictness {
    /// 502/504 means the target tried to forward: a failure for passthrough probes.
    pub gateway_fails: bool,
    /// A same-origin 3xx fails too (it resolves a name to a location).
    pub same_origin_redirect_fails: bool,
}

pub const PASSTHROUGH: Strictness = Strictness {
    gateway_fails: true,
    same_origin_redirect_fails: false,
};
pub const STRICT: Strictness = Strictness {
    gateway_fails: true,
    same_origin_redirect_fails: true,
};

/// The common judge for "every request here must be refused, and nothing may
/// reach the upstream": requires `control`, then fails on any forwarded token,
/// any 2xx, any off-origin 3xx, and as `strict` says.
pub fn refusals<P, F: ControlFacts>(
    j: &Judge<P, F>,
    rec: &ProbeRecord,
    control: &str,
    strict: Strictness,
) -> Verdict {
    if let Some(v) = j.require(control) {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    if rec.exchanges.is_empty() {
        return inconclusive("no request was recorded");
    }
    if let Some(v) = forwarded_fail(rec) {
        return v;
    }
    let mut codes: Vec<String> = Vec::new();
    for ex in &rec.exchanges {
        let what = format!("{} {}", ex.request_method(), short(&ex.request_target()));
        match classify::classify(&origin, ex) {
            Answer::Served(s) => return fail(format!("{what} was answered {s}")),
            Answer::RedirectOffOrigin(loc) => {
                return fail(format!(
                    "{what} was redirected off the mirror's origin to {}",
                    short(&loc)
                ))
            }
            Answer::RedirectSameOrigin(loc) if strict.same_origin_redirect_fails => {
                return fail(format!("{what} was redirected to {}", short(&loc)))
            }
            Answer::Gateway(s) if strict.gateway_fails => {
                return fail(format!(
                    "{what} was answered {s}: the target tried to reach another server"
                ))
            }
            Answer::RedirectSameOrigin(_) => codes.push("3xx".into()),
            Answer::Gateway(s) | Answer::Refused(s) => codes.push(s.to_string()),
            Answer::NoAnswer => codes.push("no answer".into()),
        }
    }
    pass(format!(
        "all {} requests refused ({})",
        rec.exchanges.len(),
        tally(&codes)
    ))
}

/// Whether the control page was served right after this record's requests
/// (the first [`Observation::Alive`], recorded when one of them got no
/// answer; a later one shows the target back after a stop).
pub fn alive_after(rec: &ProbeRecord) -> bool {
    first_alive(rec).is_some_and(|ex| ex.status() == Some(200))
}

fn first_alive(rec: &ProbeRecord) -> Option<&egress_model::Exchange> {
    rec.observations.iter().find_map(|o| match o {
        Observation::Alive { exchange } => Some(exchange),
        _ => None,
    })
}

/// INCONCLUSIVE when requests of this record got no answer and the target
/// was not shown serving right after them: silence from a target that
/// stopped (crashed, restarting) is no refusal. `None` when every request
/// was answered or the target still served.
pub fn silence_unproven(rec: &ProbeRecord) -> Option<Verdict> {
    let silent = rec
        .exchanges
        .iter()
        .filter(|ex| ex.status().is_none())
        .count();
    if silent == 0 || alive_after(rec) {
        return None;
    }
    let after = first_alive(rec).map(egress_model::Exchange::summary);
    let back = rec
        .observations
        .iter()
        .find_map(|o| match o {
            Observation::Alive { exchange } if exchange.status() == Some(200) => {
                Some(format!("; it served again later ({})", exchange.label))
            }
            _ => None,
        })
        .unwrap_or_default();
    Some(inconclusive(format!(
        "{silent} of {} requests got no answer, and the control page was not served right after them ({}): a target that stopped answering shows no refusal{back}",
        rec.exchanges.len(),
        after.unwrap_or_else(|| "not asked: no control page was served".into())
    )))
}

/// FAIL when a request of this record was observed arriving at the
/// controlled upstream: names the exchange that sent it and the entry of the
/// upstream's log that shows it.
pub fn forwarded_fail(rec: &ProbeRecord) -> Option<Verdict> {
    let (ex, u) = classify::forwarded_by(rec)?;
    Some(fail(format!(
        "forwarded to the upstream: {} {} ({}) arrived there as request #{}: {} {}",
        ex.request_method(),
        short(&ex.request_target()),
        ex.label,
        u.seq,
        u.method,
        short(&u.target)
    )))
}

/// `404×3, 400×1` style summary, stable order.
pub fn tally(items: &[String]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for i in items {
        match counts.iter_mut().find(|(k, _)| k == i) {
            Some((_, n)) => *n += 1,
            None => counts.push((i.clone(), 1)),
        }
    }
    counts.sort();
    counts
        .iter()
        .map(|(k, n)| format!("{k}×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn short(s: &str) -> String {
    if s.chars().count() <= 100 {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(100).collect();
        t.push('…');
        t
    }
}
