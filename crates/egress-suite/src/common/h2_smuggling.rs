//! `P3.h2-smuggling`, for every protocol: the HTTP/2 cases of the corpus
//! ([`egress_model::smuggling::H2_CORPUS`]: pseudo-header abuse,
//! connection-specific fields, H2.CL and H2.TE, and what an HTTP/2-to-1.1
//! downgrade turns into a second request) sent over HTTP/2 to the target,
//! over https when it chooses `h2` by ALPN, else on plain http with the
//! preface at once (h2c prior knowledge).
//!
//! The positive control comes first: one connection, two GETs of a page
//! the target serves (streams 1 and 3). A target that does not speak
//! HTTP/2 (ALPN chose `http/1.1`, or the preface was answered with
//! anything but a SETTINGS frame) gets no case at all, and the sub-probe is
//! SKIPPED with that evidence. Each case then goes on a connection of its
//! own, after the same GET on stream 1 has been answered, so that every
//! refusal sits next to a served request on the same connection. The
//! judge reads only the recorded frames (and the upstream log), so
//! `report verify` re-derives it.

use crate::classify;
use crate::collect::{Collector, Evidence};
use crate::common::cases::{self, CaseVerdict, Outcomes};
use crate::common::passthrough::elsewhere;
use crate::common::smuggling::Hidden;
use crate::facts::{find, ControlFacts};
use crate::judge::{fail, inconclusive, pass, short, skipped, tally, Judge, Verdict};
use egress_model::h2::error_name;
use egress_model::smuggling::{H2Case, H2Smuggle, H2_CORPUS};
use egress_model::url::Scheme;
use egress_model::{Exchange, H2Request, ProbeRecord};
use egress_transcript::Listen;

/// The label of the positive control's exchange.
pub const CONTROL: &str = "positive control: two GETs of the hidden page on one HTTP/2 connection";

/// The label of a case's exchange.
pub fn case_label(case: &H2Case) -> String {
    format!("h2 smuggling case {}", case.id)
}

/// The GET every connection starts with (and the control sends twice).
fn control_get<P>(c: &Collector<P>, hidden: &Hidden) -> H2Request {
    H2Request::get(scheme(c), &c.client.base().host_header(), &hidden.target())
        .field("accept", hidden.accept)
}

fn scheme<P>(c: &Collector<P>) -> &'static str {
    match c.client.base().scheme() {
        Scheme::Https => "https",
        Scheme::Http => "http",
    }
}

/// Sends the positive control and, if the target speaks HTTP/2, every
/// case of the HTTP/2 corpus. Nothing is sent when no page is known.
pub fn collect<P>(c: &Collector<P>, hidden: Option<&Hidden>) -> Evidence {
    collect_with(c, hidden, Listen::default())
}

/// [`collect`] with other listening bounds (tests use a short quiet period).
pub fn collect_with<P>(c: &Collector<P>, hidden: Option<&Hidden>, listen: Listen) -> Evidence {
    let mut ev = Evidence::default();
    let Some(hidden) = hidden else { return ev };
    let authority = c.client.base().host_header();
    let other = elsewhere(c);
    c.window("P3.h2-smuggling", &mut ev, |ev| {
        let control = c.client.send_h2(
            CONTROL,
            &[control_get(c, hidden), control_get(c, hidden)],
            &listen,
        );
        let spoken = control.h2.as_ref().is_some_and(|h| h.spoken().is_ok());
        ev.push(control);
        if !spoken {
            return;
        }
        let sends: Vec<(String, [H2Request; 2])> = H2_CORPUS
            .iter()
            .map(|case| {
                let target = hidden.target();
                let mut abuse = case.build(&H2Smuggle {
                    authority: &authority,
                    other: &other,
                    scheme: scheme(c),
                    path: &target,
                });
                // proxpi answers 406 without it: a refusal that is not one.
                abuse
                    .fields
                    .push((b"accept".to_vec(), hidden.accept.as_bytes().to_vec()));
                (case_label(case), [control_get(c, hidden), abuse])
            })
            .collect();
        let client = c.client;
        for ex in cases::in_order(&sends, |(label, reqs)| client.send_h2(label, reqs, &listen)) {
            ev.push(ex);
        }
    });
    ev
}

/// Why the control exchange does not show two GETs answered 200 on one
/// HTTP/2 connection.
fn control_served(ex: &Exchange) -> Result<String, String> {
    let Some(conv) = &ex.h2 else {
        return Err(format!("no HTTP/2 connection ({})", ex.summary()));
    };
    let streams = conv.streams();
    let ok = streams.len() >= 2 && streams.iter().all(|s| s.status == Some(200) && s.ended);
    let path = streams
        .first()
        .map(|s| s.request_field(":path").unwrap_or_default())
        .unwrap_or_default();
    if ok {
        Ok(hidden_path(&path))
    } else {
        Err(format!(
            "two GETs of {} on one HTTP/2 connection were answered [{}], not 200 twice",
            short(&hidden_path(&path)),
            streams
                .iter()
                .map(egress_model::H2Stream::outcome)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// A path without its token.
fn hidden_path(path: &str) -> String {
    path.split_once("?ec=")
        .or_else(|| path.split_once("&ec="))
        .map_or(path.to_string(), |(p, _)| p.to_string())
}

/// Judges one case's exchange; `record` supplies the upstream log.
pub fn judge_case(case: &H2Case, ex: &Exchange, record: &ProbeRecord) -> CaseVerdict {
    let err = || {
        ex.error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default()
    };
    let Some(conv) = &ex.h2 else {
        return CaseVerdict::Unclear(format!("{}: not sent{}", case.id, err()));
    };
    if let Err(why) = conv.spoken() {
        return CaseVerdict::Unclear(format!(
            "{}: HTTP/2 not spoken on its connection: {why}",
            case.id
        ));
    }
    let streams = conv.streams();
    let control = streams.iter().find(|s| s.id == 1);
    let Some(abuse) = streams.iter().find(|s| s.id == 3) else {
        return CaseVerdict::Unclear(format!(
            "{}: not sent: the GET before it on stream 1 got {}{}",
            case.id,
            control.map_or_else(|| "nothing".into(), egress_model::H2Stream::outcome),
            err()
        ));
    };
    let request = short(&abuse.request_line());
    let mut faults = Vec::new();
    match abuse.status {
        Some(s @ (502 | 504)) => faults.push(format!(
            "{request} was answered {s}: the target passed it on to another server"
        )),
        Some(s) if !(400..=599).contains(&s) => faults.push(format!(
            "{request} was answered {s} on stream 3: the request was taken as valid"
        )),
        _ => {}
    }
    if let Some(at) = cases::reached_upstream(ex, record) {
        faults.push(format!("its token reached the upstream as {at}"));
    }
    if let Some(v) = CaseVerdict::from_faults(case.id, case.what, &faults) {
        return v;
    }
    let control_ok = control.is_some_and(|s| s.status == Some(200) && s.ended);
    if !control_ok {
        return CaseVerdict::Unclear(format!(
            "{}: the GET before it on the same connection got {}, so its refusal proves nothing",
            case.id,
            control.map_or_else(|| "nothing".into(), egress_model::H2Stream::outcome)
        ));
    }
    if let Some(code) = abuse.reset {
        return CaseVerdict::Refused(format!("reset {}", error_name(code)));
    }
    if let Some(s) = abuse.status {
        return CaseVerdict::Refused(s.to_string());
    }
    if let Some((at, g)) = conv.goaway() {
        if at > abuse.sent_at {
            return CaseVerdict::Refused(format!(
                "GOAWAY {}",
                error_name(g.error_code().unwrap_or_default())
            ));
        }
    }
    if conv.end.is_some_and(egress_model::ListenEnd::closed) {
        return CaseVerdict::Refused("closed".into());
    }
    CaseVerdict::Unclear(format!(
        "{}: no answer on stream 3, and the connection stayed open ({:?}){}",
        case.id,
        conv.end,
        err()
    ))
}

/// The judge: requires the protocol's `control` (a served page); SKIPPED
/// when the target does not speak HTTP/2; then this sub-probe's own
/// positive control; then every case.
pub fn judge<P, F: ControlFacts>(j: &Judge<P, F>, rec: &ProbeRecord, control: &str) -> Verdict {
    if let Some(v) = j.require(control) {
        return v;
    }
    let Some(ctrl) = find(rec, CONTROL) else {
        return inconclusive("no page to request over HTTP/2 is known, so nothing was sent");
    };
    let Some(conv) = &ctrl.h2 else {
        return inconclusive(format!(
            "no connection for HTTP/2: {}",
            ctrl.error.as_deref().unwrap_or("nothing recorded")
        ));
    };
    if let Err(why) = conv.spoken() {
        return skipped(format!(
            "the target does not speak HTTP/2: {why}; no HTTP/2 case was sent"
        ));
    }
    let served = control_served(ctrl);
    let mut o = Outcomes::default();
    for case in H2_CORPUS {
        let ex = find(rec, &case_label(case));
        o.add(case.id, ex.map(|ex| judge_case(case, ex, rec)));
    }
    let total = H2_CORPUS.len();
    let how = match conv.via {
        egress_model::H2Via::Alpn => "HTTP/2 by ALPN",
        egress_model::H2Via::PriorKnowledge => "h2c prior knowledge",
    };
    if let Some(first) = o.first_fail(total) {
        return fail(format!(
            "{} of {total} HTTP/2 abuses ({how}) were taken or passed on: {first}",
            o.fails.len()
        ));
    }
    let path = match served {
        Ok(path) => path,
        Err(why) => {
            return inconclusive(format!(
                "positive control: {why}; a refusal proves nothing where a second stream is not served ({} of {total} abuses refused)",
                o.refused.len()
            ))
        }
    };
    if let Some(first) = o.unclear.first() {
        return inconclusive(format!(
            "{} of {total} HTTP/2 abuses neither refused nor taken: {first}",
            o.unclear.len()
        ));
    }
    let upstream = if classify::has_upstream_log(rec) {
        ", none reached the upstream"
    } else {
        ""
    };
    pass(format!(
        "all {total} HTTP/2 abuses ({how}) refused ({}){upstream}; each connection's GET of {} was answered 200 first",
        tally(&o.refused),
        short(&path)
    ))
}
