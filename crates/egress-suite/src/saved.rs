//! What `report verify` and `report render` do with a saved report of any
//! kind ([`Saved`]): re-derive its verdicts, and render it, or render that
//! it does not verify.

use crate::combined::Saved;

/// One verdict `report verify` re-derived differently: its id, the
/// recorded verdict and the re-derived one, each with its reason.
pub type Finding = (String, String, String);

/// What `report render` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenderFormat {
    Html,
    Sarif,
    Text,
}

impl Saved {
    /// What `report verify` finds: the line it says when every verdict
    /// re-derives, and each verdict that differs. A sub-probe's re-derived
    /// verdict names the digest of the transcript it was derived from
    /// ([`crate::digests`]), so that a reader can tell whether the evidence
    /// is the one a page or SARIF log cited.
    pub fn findings(&self) -> (String, Vec<Finding>) {
        match self {
            Saved::Combined(both) => (
                format!(
                    "{} sub-probes, {} predicates and {} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
                    both.check.probes.len(),
                    both.check.predicates.len(),
                    both.scan.records.len(),
                    both.outcome
                ),
                both.verify(),
            ),
            Saved::Scan(scan) => (
                format!(
                    "{} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
                    scan.records.len(),
                    scan.outcome
                ),
                egress_sandbox::verify(scan)
                    .into_iter()
                    .map(|d| {
                        (
                            d.id.to_string(),
                            format!("{} ({})", d.recorded.0, d.recorded.1),
                            format!("{} ({})", d.derived.0, d.derived.1),
                        )
                    })
                    .collect(),
            ),
            Saved::Check(report) => (
                format!(
                    "{} sub-probes and {} predicates re-derived from the evidence; all agree (outcome {})",
                    report.probes.len(),
                    report.predicates.len(),
                    report.outcome
                ),
                crate::verify(report)
                    .into_iter()
                    .map(|d| {
                        let from = report.probe(&d.id).map_or(String::new(), |rec| {
                            format!(
                                " from transcript sha256 {}",
                                crate::digests::transcript(rec).to_hex()
                            )
                        });
                        (
                            d.id.to_string(),
                            format!("{} ({})", d.recorded.0, d.recorded.1),
                            format!("{} ({}){from}", d.derived.0, d.derived.1),
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// The report rendered as `format`, when `diffs` (its
    /// [`findings`](Self::findings)) is empty; else a "does not verify"
    /// rendering of `file` naming each verdict that disagreed.
    pub fn render(&self, format: RenderFormat, file: &str, diffs: &[Finding]) -> String {
        if !diffs.is_empty() {
            return match format {
                RenderFormat::Html => crate::html::unverified(file, diffs),
                RenderFormat::Sarif => crate::sarif::unverified(file, diffs),
                RenderFormat::Text => {
                    let mut t = format!(
                        "DOES NOT VERIFY: {file}: {} verdicts differ from what the evidence supports:\n",
                        diffs.len()
                    );
                    for (id, recorded, derived) in diffs {
                        t.push_str(&format!(
                            "  {id}: recorded {recorded}, re-derived {derived}\n"
                        ));
                    }
                    t
                }
            };
        }
        match (self, format) {
            (Saved::Check(r), RenderFormat::Html) => crate::html::reports(&[r]),
            (Saved::Check(r), RenderFormat::Sarif) => crate::sarif::reports(&[r]),
            (Saved::Check(r), RenderFormat::Text) => crate::render::text(r),
            (Saved::Combined(b), RenderFormat::Html) => crate::html::combined(b),
            (Saved::Combined(b), RenderFormat::Sarif) => crate::sarif::combined(b),
            (Saved::Combined(b), RenderFormat::Text) => b.text(),
            (Saved::Scan(s), RenderFormat::Html) => crate::html::scan(s),
            (Saved::Scan(s), RenderFormat::Sarif) => crate::sarif::scan(s),
            (Saved::Scan(s), RenderFormat::Text) => egress_sandbox::render::text(s),
        }
    }
}
