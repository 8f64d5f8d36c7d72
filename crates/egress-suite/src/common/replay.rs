//! P2 judging every protocol shares: absent listings and the whole run's
//! upstream contact.

use crate::classify::{self, has_upstream_log, Answer};
use crate::facts::{success_body, ControlFacts};
use crate::judge::{fail, pass, short, skipped, Judge, Verdict};
use egress_model::ProbeRecord;

/// How an absent name's listing documents were answered: one code per
/// answer, or the failure for the first that served a listing with entries
/// (`count` says how many; `None`: not a listing at all), tried to fetch it,
/// or redirected off the origin. Shared by PyPI pages and npm packuments.
pub fn absent_listings(
    origin: &egress_model::Url,
    rec: &ProbeRecord,
    count: impl Fn(&[u8]) -> Option<usize>,
    entries: &str,
    listing: &str,
) -> Result<Vec<String>, Verdict> {
    let mut codes = Vec::new();
    for ex in &rec.exchanges {
        let what = format!("{} {}", ex.request_method(), short(&ex.request_target()));
        match classify::classify(origin, ex) {
            Answer::Served(s) => match success_body(ex).and_then(&count) {
                Some(0) => codes.push(format!("{s} empty")),
                Some(n) => {
                    return Err(fail(format!(
                        "{what} served a {listing} listing {n} {entries} absent from the snapshot"
                    )))
                }
                None => {
                    return Err(fail(format!(
                        "{what} was answered {s} with content that is not an empty {listing}"
                    )))
                }
            },
            Answer::RedirectOffOrigin(loc) => {
                return Err(fail(format!("{what} was redirected to {}", short(&loc))))
            }
            Answer::Gateway(s) => {
                return Err(fail(format!(
                    "{what} was answered {s}: the target tried to fetch it upstream"
                )))
            }
            Answer::RedirectSameOrigin(_) => codes.push("3xx".into()),
            Answer::Refused(s) => codes.push(s.to_string()),
            Answer::NoAnswer => codes.push("no answer".into()),
        }
    }
    Ok(codes)
}

/// P2.upstream-contact once `control` passed: any request in the whole
/// run's upstream log (tripwire hits aside) fails. Shared by PyPI and npm.
pub fn upstream_contact_verdict<P, F: ControlFacts>(
    j: &Judge<P, F>,
    rec: &ProbeRecord,
    control: &str,
) -> Verdict {
    if !has_upstream_log(rec) {
        return skipped(
            "the upstream is not controlled by the suite, so contact cannot be observed",
        );
    }
    if let Some(v) = j.require(control) {
        return v;
    }
    let log: Vec<_> = classify::upstream_log(rec)
        .filter(|u| !u.tripwire)
        .collect();
    match log.first() {
        Some(first) => fail(format!(
            "the target contacted the upstream {} times during the run, first {} {}{}",
            log.len(),
            first.method,
            short(&first.target),
            window_of(j.records, first.seq)
                .map(|id| format!(" (during {id}'s requests)"))
                .unwrap_or_default()
        )),
        None => pass("the upstream received no request from the target during the whole run"),
    }
}

/// The sub-probe whose window logged the upstream request `seq`: the one
/// whose requests were under way when the upstream received it (the whole
/// run's window aside).
fn window_of(records: &[ProbeRecord], seq: u64) -> Option<&str> {
    records.iter().find_map(|r| {
        r.observations
            .iter()
            .any(|o| match o {
                egress_model::Observation::UpstreamLog { window, requests } => {
                    window != "whole run" && requests.iter().any(|u| u.seq == seq)
                }
                _ => false,
            })
            .then_some(r.id.as_str())
    })
}
