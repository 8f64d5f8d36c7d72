//! The short form of a run, what a person reads first: one line per target
//! with its verdict counts, the predicates (or, over several targets, the
//! discrimination matrix), and one line per FAIL or INCONCLUSIVE. Every
//! line is bounded, and so is their number: the whole detail is in the
//! report files and under `--verbose` (`render::text`).

use crate::render::discriminates;
use crate::report::Report;
use crate::subprobe::{Predicate, PREDICATES};
use egress_model::report_text::Paint;
use egress_model::{ProbeRecord, Status};

/// Columns a line is cut to (with `…`), so that a long reason stays one line.
pub const LINE: usize = 120;
const VERDICT: usize = 13;

/// How many sub-probes of a report ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub pass: usize,
    pub fail: usize,
    pub inconclusive: usize,
    pub skipped: usize,
}

impl Counts {
    pub fn of(report: &Report) -> Counts {
        let mut c = Counts::default();
        for p in &report.probes {
            match p.status {
                Status::Pass => c.pass += 1,
                Status::Fail => c.fail += 1,
                Status::Inconclusive => c.inconclusive += 1,
                Status::Skipped => c.skipped += 1,
            }
        }
        c
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} pass, {} fail, {} inconclusive, {} skipped",
            self.pass, self.fail, self.inconclusive, self.skipped
        )
    }
}

/// `line` cut to [`LINE`] characters, ending in `…` when cut.
pub fn cut(line: &str) -> String {
    if line.chars().count() <= LINE {
        return line.to_string();
    }
    let mut s: String = line.chars().take(LINE - 1).collect();
    s.push('…');
    s
}

/// `LABEL  VERDICT  counts  URL`, the label padded to `width`.
pub fn target_line(label: &str, width: usize, report: &Report, paint: Paint) -> String {
    let pad = " ".repeat(width.saturating_sub(label.chars().count()));
    let head = format!("{label}{pad}  ");
    let tail = format!("{}  {}", Counts::of(report), report.plan.index_url);
    let verdict = report.outcome.to_string();
    let width = verdict.len() + 2;
    format!(
        "{head}{}{}",
        paint.verdict(&verdict, width),
        cut_tail(&head, width, &tail)
    )
}

/// `tail` cut so that `head`, a verdict of `verdict` columns and `tail` fit
/// in [`LINE`].
fn cut_tail(head: &str, verdict: usize, tail: &str) -> String {
    let room = LINE.saturating_sub(head.chars().count() + verdict);
    if tail.chars().count() <= room {
        return tail.to_string();
    }
    let mut s: String = tail.chars().take(room.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// One line per predicate of one report: `P1 digest binding  PASS  reason`.
pub fn predicate_lines(report: &Report, paint: Paint) -> Vec<String> {
    PREDICATES
        .iter()
        .map(|(pid, name)| {
            let head = format!("{:<28}", format!("{pid} {name}"));
            let (status, reason) = report
                .predicate(pid)
                .map_or((Status::Skipped, "not run"), |p| (p.status, &p.reason));
            let tail = format!(" {reason}");
            format!(
                "{head}{}{}",
                paint.verdict(&status.to_string(), VERDICT),
                cut_tail(&head, VERDICT, &tail)
            )
        })
        .collect()
}

fn problems(report: &Report) -> impl Iterator<Item = &ProbeRecord> {
    report
        .probes
        .iter()
        .filter(|p| matches!(p.status, Status::Fail | Status::Inconclusive))
}

/// One line per FAIL or INCONCLUSIVE sub-probe, with its reason (and for
/// a control, its evidence on a second line), at most `max` lines: past
/// that, the last says how many more there are.
pub fn problem_lines(report: &Report, max: usize, paint: Paint) -> Vec<String> {
    let all: Vec<&ProbeRecord> = problems(report).collect();
    let mut lines = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let body = format!("{:<28} {}", p.id, p.reason);
        let mut these = vec![format!(
            "  {}{}",
            paint.verdict(&p.status.to_string(), VERDICT),
            cut_tail("  ", VERDICT, &body)
        )];
        // A control that did not pass holds every other verdict back: its
        // evidence (a refused connection, a TLS error) is the thing to fix.
        if p.id.starts_with("C.") {
            if let Some(ex) = crate::render::key_exchange(p) {
                these.push(cut(&format!("{:17}evidence: {ex}", "")));
            }
        }
        let last = i + 1 == all.len();
        let room = if last { max } else { max.saturating_sub(1) };
        if lines.len() + these.len() > room {
            lines.push(format!(
                "  … and {} more FAIL or INCONCLUSIVE: --verbose, or the report files",
                all.len() - i
            ));
            break;
        }
        lines.extend(these);
    }
    lines
}

/// One line per predicate that has a FAIL or INCONCLUSIVE sub-probe,
/// naming them without their reasons: for a target that is meant to fail
/// (the caching proxy of the built-in run), where the reasons are the
/// demonstration and live in the report files.
pub fn grouped_problem_lines(label: &str, report: &Report, paint: Paint) -> Vec<String> {
    let mut lines = Vec::new();
    for (pid, _) in std::iter::once((Predicate::Control, "")).chain(PREDICATES) {
        let prefix = format!("{pid}.");
        let here: Vec<&ProbeRecord> = problems(report)
            .filter(|p| p.id.starts_with(&prefix))
            .collect();
        let worst = if here.iter().any(|p| p.status == Status::Fail) {
            Status::Fail
        } else if here.is_empty() {
            continue;
        } else {
            Status::Inconclusive
        };
        let names: Vec<&str> = here
            .iter()
            .map(|p| p.id.strip_prefix(&prefix).unwrap_or(&p.id))
            .collect();
        let head = format!("  {label:<5} {:<3}", pid.as_str());
        let verdict = worst.to_string();
        let width = verdict.len() + 1;
        let tail = format!("{}: {}", here.len(), names.join(", "));
        lines.push(format!(
            "{head}{}{}",
            paint.verdict(&verdict, width),
            cut_tail(&head, width, &tail)
        ));
    }
    lines
}

/// The controls' verdict over one report: PASS when every `C.*` sub-probe
/// passes, else the worst of them.
fn controls(report: &Report) -> Status {
    let mut worst = Status::Pass;
    for p in report.probes.iter().filter(|p| p.id.starts_with("C.")) {
        worst = match (worst, p.status) {
            (_, Status::Fail) | (Status::Fail, _) => Status::Fail,
            (_, Status::Inconclusive) | (Status::Inconclusive, _) => Status::Inconclusive,
            (w, _) => w,
        };
    }
    worst
}

/// A group of the matrix: a protocol's title and its targets, each with
/// its short column label.
pub struct Group<'a> {
    pub title: &'a str,
    pub targets: Vec<(&'a str, &'a Report)>,
}

/// The discrimination matrix at the level of predicates, every group side
/// by side: a row per predicate (and the controls), a column per target,
/// and per group whether the row separates its targets.
pub fn matrix_lines(groups: &[Group<'_>], paint: Paint) -> Vec<String> {
    const CELL: usize = 6;
    let first = 26;
    let width = |g: &Group<'_>| g.targets.len() * CELL + 5;
    let mut titles = format!("{:first$}", "");
    let mut heads = format!("{:first$}", "");
    for g in groups {
        titles.push_str(&format!("{:<w$}", g.title, w = width(g)));
        for (label, _) in &g.targets {
            heads.push_str(&format!("{label:<CELL$}"));
        }
        heads.push_str("disc ");
    }
    let mut lines = vec![titles.trim_end().to_string(), heads.trim_end().to_string()];
    let rows = std::iter::once((None, "controls".to_string())).chain(
        PREDICATES
            .iter()
            .map(|(pid, name)| (Some(*pid), format!("{pid} {name}"))),
    );
    for (pid, label) in rows {
        let mut line = format!("{label:<first$}");
        for g in groups {
            let statuses: Vec<Status> = g
                .targets
                .iter()
                .map(|(_, r)| match pid {
                    None => controls(r),
                    Some(pid) => r.predicate(pid).map_or(Status::Skipped, |p| p.status),
                })
                .collect();
            for s in &statuses {
                let word = match s {
                    Status::Inconclusive => "INC".to_string(),
                    Status::Skipped => "SKIP".to_string(),
                    s => s.to_string(),
                };
                line.push_str(&paint.verdict(&word, CELL));
            }
            let disc = match pid {
                None => "-",
                Some(_) if discriminates(&statuses) => "yes",
                Some(_) => "no",
            };
            line.push_str(&format!("{disc:<5}"));
        }
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// The short form of one report, as `check` prints it: at most `max`
/// lines (never fewer than the fixed part of about a dozen).
pub fn report_text(report: &Report, max: usize, paint: Paint) -> String {
    let mut lines = vec![
        cut(&format!(
            "== {} — {}",
            report.target_name, report.plan.index_url
        )),
        cut(&crate::render::plan_line(report)),
        target_line("sub-probes", 12, report, paint),
        String::new(),
    ];
    lines.extend(predicate_lines(report, paint));
    let tail = [
        String::new(),
        format!(
            "outcome: {} (exit {}); every exchange and reason: --verbose, or the report files (--out DIR)",
            paint.verdict(&report.outcome.to_string(), 0),
            report.exit_code()
        ),
    ];
    let n = problems(report).count();
    if n > 0 {
        lines.push(String::new());
        lines.push(format!("FAIL and INCONCLUSIVE ({n}):"));
        let room = max.saturating_sub(lines.len() + tail.len()).max(1);
        lines.extend(problem_lines(report, room, paint));
    }
    lines.extend(tail);
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_short_lines_and_marks_cut_ones() {
        assert_eq!(cut("abc"), "abc");
        let long = "x".repeat(LINE + 10);
        let c = cut(&long);
        assert_eq!(c.chars().count(), LINE);
        assert!(c.ends_with('…'));
    }

    #[test]
    fn a_cut_tail_keeps_the_line_within_bounds() {
        let t = cut_tail("abcd", VERDICT, &"y".repeat(500));
        assert_eq!(4 + VERDICT + t.chars().count(), LINE);
        assert_eq!(cut_tail("abcd", VERDICT, " short"), " short");
    }
}
