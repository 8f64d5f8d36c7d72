//! docs/predicates.md and the sub-probe tables agree. The PyPI part of the
//! docs comes before the npm heading, the npm part after it, the apt part
//! after the apt heading, the cargo part after the cargo heading, the Hub's
//! after the hf heading. In each part:
//! - every entry of the protocol's table is named (`ID` in backticks);
//! - a sub-probe with a heading of its own (`### \`ID\`: title`) carries the
//!   table's title, and the table's doc text is quoted from that section;
//! - any other sub-probe's doc text is quoted from a table row or paragraph
//!   that names it;
//! - every sub-probe id named in backticks is in the protocol's table.

use egress_suite::apt::Apt;
use egress_suite::cargo::Cargo;
use egress_suite::hf::Hf;
use egress_suite::npm::Npm;
use egress_suite::pypi::Pypi;
use egress_suite::subprobe::Suite;
use std::collections::BTreeSet;

const DOCS: &str = include_str!("../../../docs/predicates.md");
const NPM_HEADING: &str = "## npm: the predicates in npm's terms";
const APT_HEADING: &str = "## apt: the predicates in apt's terms";
const CARGO_HEADING: &str = "## cargo: the predicates in cargo's terms";
const HF_HEADING: &str = "## hf: the predicates in the Hub's terms";

type Parts = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// The PyPI part, the npm part, the apt part, the cargo part and the Hub's,
/// in that order.
fn parts() -> Parts {
    let (pypi, rest) = DOCS
        .split_once(NPM_HEADING)
        .expect("docs/predicates.md has the npm heading");
    let (npm, rest) = rest
        .split_once(APT_HEADING)
        .expect("docs/predicates.md has the apt heading after the npm one");
    let (apt, rest) = rest
        .split_once(CARGO_HEADING)
        .expect("docs/predicates.md has the cargo heading after the apt one");
    let (cargo, hf) = rest
        .split_once(HF_HEADING)
        .expect("docs/predicates.md has the hf heading after the cargo one");
    (pypi, npm, apt, cargo, hf)
}

/// Whitespace collapsed, so that line wrapping does not matter.
fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a code span is a sub-probe id: `C.name` or `P1.name` .. `P6.name`.
fn is_subprobe_id(span: &str) -> bool {
    let Some((prefix, name)) = span.split_once('.') else {
        return false;
    };
    matches!(prefix, "C" | "P1" | "P2" | "P3" | "P4" | "P5" | "P6")
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The sub-probe ids a text names in backticks.
fn ids_in(text: &str) -> BTreeSet<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| is_subprobe_id(s))
        .collect()
}

/// A `### \`ID\`: title` heading: the id, the title, and its section (up to
/// the next heading).
struct Headed<'a> {
    id: &'a str,
    title: &'a str,
    section: String,
}

fn headed(part: &str) -> Vec<Headed<'_>> {
    let lines: Vec<&str> = part.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("### `") else {
            continue;
        };
        let Some((id, title)) = rest.split_once("`: ") else {
            continue;
        };
        let section = lines
            .iter()
            .skip(i + 1)
            .take_while(|l| !l.starts_with('#'))
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        out.push(Headed { id, title, section });
    }
    out
}

/// Paragraphs, with each table row a block of its own.
fn blocks(part: &str) -> Vec<String> {
    let mut out = Vec::new();
    for para in part.split("\n\n") {
        if para.trim_start().starts_with('|') {
            out.extend(para.lines().map(str::to_string));
        } else {
            out.push(para.to_string());
        }
    }
    out
}

/// Every disagreement between `S`'s table and its part of the docs.
fn disagreements<S: Suite>(protocol: &str, part: &str) -> Vec<String> {
    let mut out = Vec::new();
    let named = ids_in(part);
    let headings = headed(part);
    let blocks = blocks(part);
    for sp in S::TABLE {
        let id = sp.id.as_str();
        if !named.contains(id) {
            out.push(format!(
                "{protocol}: {id} is not named in its part of the docs"
            ));
        }
        if id.split('.').next() != Some(sp.predicate.as_str()) {
            out.push(format!("{protocol}: {id} is filed under {}", sp.predicate));
        }
        let doc = normalize(sp.doc);
        if doc.is_empty() {
            out.push(format!("{protocol}: {id} has no doc text"));
        }
        match headings.iter().find(|h| h.id == id) {
            Some(h) => {
                if h.title.replace('`', "") != sp.title {
                    out.push(format!(
                        "{protocol}: {id} is titled {:?} in the docs, {:?} in the table",
                        h.title, sp.title
                    ));
                }
                if !normalize(&h.section).contains(&doc) {
                    out.push(format!(
                        "{protocol}: {id}'s doc text is not in its section: {doc:?}"
                    ));
                }
            }
            None => {
                let quoted = blocks
                    .iter()
                    .filter(|b| b.contains(&format!("`{id}`")))
                    .any(|b| normalize(b).contains(&doc));
                if !quoted {
                    out.push(format!(
                        "{protocol}: {id}'s doc text is in no row or paragraph that names it: {doc:?}"
                    ));
                }
            }
        }
    }
    for id in named {
        if S::find(id).is_none() {
            out.push(format!(
                "{protocol}: the docs name {id}, which is not in the table"
            ));
        }
    }
    for h in &headings {
        if S::find(h.id).is_none() {
            out.push(format!("{protocol}: heading for unknown {}", h.id));
        }
    }
    out
}

#[test]
fn docs_and_the_pypi_table_agree() {
    let (pypi, _, _, _, _) = parts();
    let problems = disagreements::<Pypi>("pypi", pypi);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn docs_and_the_npm_table_agree() {
    let (_, npm, _, _, _) = parts();
    let problems = disagreements::<Npm>("npm", npm);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn docs_and_the_apt_table_agree() {
    let (_, _, apt, _, _) = parts();
    let problems = disagreements::<Apt>("apt", apt);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn docs_and_the_cargo_table_agree() {
    let (_, _, _, cargo, _) = parts();
    let problems = disagreements::<Cargo>("cargo", cargo);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn docs_and_the_hf_table_agree() {
    let (_, _, _, _, hf) = parts();
    let problems = disagreements::<Hf>("hf", hf);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn ids_are_unique_and_ordered_by_phase() {
    fn check<S: Suite>() {
        let mut seen = BTreeSet::new();
        let mut places = BTreeSet::new();
        for sp in S::TABLE {
            assert!(seen.insert(sp.id), "{} twice", sp.id);
            assert!(
                places.insert((sp.phase, sp.order)),
                "{}: another entry has phase {:?} and order {}",
                sp.id,
                sp.phase,
                sp.order
            );
            assert!(S::PHASES.contains(&sp.phase), "{}: phase not walked", sp.id);
        }
    }
    check::<Pypi>();
    check::<Npm>();
    check::<Apt>();
    check::<Cargo>();
    check::<Hf>();
}
