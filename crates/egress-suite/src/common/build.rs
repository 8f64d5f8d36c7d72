//! P4 judging every protocol shares: tripwire hits in the upstream log and
//! template markers in served text.

use crate::classify;
use crate::facts::success_body;
use crate::judge::{fail, short, Verdict};
use egress_model::{ProbeRecord, TEMPLATE_MARKERS};

pub fn tripwire_hits(rec: &ProbeRecord) -> Vec<&egress_model::UpstreamRequest> {
    classify::upstream_log(rec).filter(|u| u.tripwire).collect()
}

/// The number of served bodies that carry a raw template marker, or the
/// failure for the first body in which a marker came back evaluated.
pub fn template_scan(rec: &ProbeRecord) -> Result<usize, Verdict> {
    let mut carrying = 0;
    for ex in &rec.exchanges {
        let Some(body) = success_body(ex) else {
            continue;
        };
        let text = String::from_utf8_lossy(body);
        for (raw, evaluated) in TEMPLATE_MARKERS {
            if text.contains(evaluated) {
                return Err(fail(format!(
                    "GET {} evaluated package text: {raw:?} came back as {evaluated:?}",
                    short(&ex.request_target())
                )));
            }
        }
        if carries_raw_marker(&text) {
            carrying += 1;
        }
    }
    Ok(carrying)
}

/// Whether `text` carries a raw (unevaluated) template marker in any form.
pub fn carries_raw_marker(text: &str) -> bool {
    TEMPLATE_MARKERS
        .iter()
        .any(|(raw, _)| raw_forms(raw).iter().any(|f| text.contains(f.as_str())))
}

/// Forms in which a raw marker may appear once escaped for HTML or JSON.
fn raw_forms(raw: &str) -> [String; 3] {
    [
        raw.to_string(),
        raw.replace('<', "&lt;").replace('>', "&gt;"),
        raw.replace('<', "\\u003c").replace('>', "\\u003e"),
    ]
}
