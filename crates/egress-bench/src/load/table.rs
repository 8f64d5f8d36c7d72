//! The run as one markdown table: a row per measure, a column per server,
//! and for two servers their ratio (first / second).

use super::scenarios::{Held, Idle, KeepAlive, Latencies, Legit};
use std::time::Duration;

/// One scenario's figures for one server, or why it could not run.
pub(super) type Outcome<T> = Result<T, String>;

/// Everything measured on one server.
#[derive(Default)]
pub(super) struct Column {
    pub(super) idle: Option<Outcome<Idle>>,
    pub(super) alone: Option<Outcome<Legit>>,
    pub(super) held: Vec<Outcome<Held>>,
    pub(super) keep_alive: Option<Outcome<KeepAlive>>,
}

/// What was run: the servers' names (one column each, in order) and the
/// scenarios' sizes (0 for one not run).
pub(super) struct Plan<'a> {
    pub(super) names: Vec<&'a str>,
    pub(super) idle: usize,
    pub(super) held: Vec<usize>,
    pub(super) keep_alive: usize,
    pub(super) legit_every: Duration,
}

/// One row: the text of each cell and, where the cell is a number that a
/// ratio makes sense of, that number.
struct Row {
    measure: String,
    cells: Vec<(String, Option<f64>)>,
    lower_is_better: bool,
}

fn ms(us: Option<u64>) -> (String, Option<f64>) {
    match us {
        Some(us) => {
            let v = us as f64 / 1000.0;
            (format!("{v:.2}"), Some(v))
        }
        None => ("—".into(), None),
    }
}

fn num(v: f64, decimals: usize) -> (String, Option<f64>) {
    (format!("{v:.decimals$}"), Some(v))
}

fn text(s: String) -> (String, Option<f64>) {
    (s, None)
}

fn p99(l: &Latencies) -> Option<u64> {
    l.percentile(99.0)
}

fn successes(l: &Legit) -> String {
    let pct = if l.sent == 0 {
        0.0
    } else {
        l.ok as f64 * 100.0 / l.sent as f64
    };
    let mut s = format!("{} of {} ({pct:.0}%)", l.ok, l.sent);
    if !l.failures.is_empty() {
        s.push_str(&format!("; failed: {}", l.failures.join("; ")));
    }
    s
}

/// A row per server from `f`, or the error that kept the scenario from
/// running.
fn per<T>(
    outcomes: &[Option<&Outcome<T>>],
    f: impl Fn(&T) -> (String, Option<f64>),
) -> Vec<(String, Option<f64>)> {
    outcomes
        .iter()
        .map(|o| match o {
            Some(Ok(v)) => f(v),
            Some(Err(e)) => text(format!("not run: {e}")),
            None => text("—".into()),
        })
        .collect()
}

pub(super) fn render(args: &Plan<'_>, cols: &[Column]) -> String {
    let mut rows: Vec<Row> = Vec::new();
    let mut row = |measure: String, cells: Vec<(String, Option<f64>)>, lower: bool| {
        rows.push(Row {
            measure,
            cells,
            lower_is_better: lower,
        })
    };
    if args.idle > 0 {
        let n = args.idle;
        let idle: Vec<_> = cols.iter().map(|c| c.idle.as_ref()).collect();
        row(
            "RSS with no connection, KiB".into(),
            per(&idle, |i| num(i.rss_before_kib as f64, 0)),
            true,
        );
        row(
            format!("RSS with {n} idle connections, KiB"),
            per(&idle, |i| num(i.rss_after_kib as f64, 0)),
            true,
        );
        row(
            "idle connections still open after 2 s".into(),
            per(&idle, |i| text(format!("{} of {n}", i.open))),
            false,
        );
        row(
            "**RSS per 1,000 idle connections, KiB**".into(),
            per(&idle, |i| match i.per_thousand_kib() {
                Some(v) => num(v, 0),
                None => text("— (none open)".into()),
            }),
            true,
        );
    }
    let held: Vec<usize> = args.held.iter().copied().filter(|h| *h > 0).collect();
    if !held.is_empty() {
        let every = args.legit_every.as_millis();
        let alone: Vec<_> = cols.iter().map(|c| c.alone.as_ref()).collect();
        row(
            format!("legitimate client alone (1 GET every {every} ms), 200s"),
            per(&alone, |l| text(successes(l))),
            false,
        );
        row(
            "legitimate client alone, p99 latency, ms".into(),
            per(&alone, |l| ms(p99(&l.latencies))),
            true,
        );
        row(
            "legitimate client's thread: nice value".into(),
            per(&alone, |l| match &l.nice {
                Ok(n) => text(n.to_string()),
                Err(why) => text(format!("unchanged: {why}")),
            }),
            false,
        );
        for (k, h) in held.iter().enumerate() {
            let get: Vec<_> = cols.iter().map(|c| c.held.get(k)).collect();
            row(
                format!("**{h} held connections: legitimate client's 200s**"),
                per(&get, |r| text(successes(&r.legit))),
                false,
            );
            row(
                format!("**{h} held: legitimate p99 latency, ms**"),
                per(&get, |r| ms(p99(&r.legit.latencies))),
                true,
            );
            row(
                format!("{h} held: legitimate p99 / unloaded p99"),
                cols.iter()
                    .map(|c| {
                        let base = c
                            .alone
                            .as_ref()
                            .and_then(|l| l.as_ref().ok())
                            .and_then(|l| p99(&l.latencies));
                        match (c.held.get(k), base) {
                            (Some(Ok(r)), Some(b)) if b > 0 => match p99(&r.legit.latencies) {
                                Some(v) => num(v as f64 / b as f64, 2),
                                None => text("—".into()),
                            },
                            _ => text("—".into()),
                        }
                    })
                    .collect(),
                true,
            );
            row(
                format!(
                    "{h} held: open when the client started / at the end; closed by the server"
                ),
                per(&get, |r| {
                    text(format!(
                        "{} / {}; {}",
                        r.connected, r.open_at_end, r.closed_by_server
                    ))
                }),
                false,
            );
            row(
                format!("{h} held: peak RSS, KiB"),
                per(&get, |r| num(r.peak_rss_kib as f64, 0)),
                true,
            );
        }
    }
    if args.keep_alive > 0 {
        let n = args.keep_alive;
        let get: Vec<_> = cols.iter().map(|c| c.keep_alive.as_ref()).collect();
        row(
            format!("**{n} keep-alive connections: requests/s**"),
            per(&get, |k| {
                num(k.ok as f64 / k.elapsed.as_secs_f64().max(0.001), 0)
            }),
            false,
        );
        row(
            format!("**{n} keep-alive: p99 latency, ms**"),
            per(&get, |k| ms(p99(&k.latencies))),
            true,
        );
        row(
            format!("{n} keep-alive: p50 latency, ms"),
            per(&get, |k| ms(k.latencies.percentile(50.0))),
            true,
        );
        row(
            format!(
                "{n} keep-alive: open when measuring began; errors (non-200, reset) of responses"
            ),
            per(&get, |k| {
                text(format!(
                    "{} of {}; {} of {}",
                    k.connected,
                    k.connections,
                    k.errors,
                    k.errors + k.ok
                ))
            }),
            false,
        );
        row(
            format!("**{n} keep-alive: peak RSS during the run, KiB**"),
            per(&get, |k| num(k.peak_rss_kib as f64, 0)),
            true,
        );
    }

    let names = &args.names;
    let two = names.len() == 2;
    let mut out = String::new();
    out.push_str(&format!("| measure | {} |", names.join(" | ")));
    if let [a, b] = names.as_slice() {
        out.push_str(&format!(" ratio ({a}/{b}) |"));
    }
    out.push('\n');
    out.push_str(&"|---".repeat(names.len() + 1 + usize::from(two)));
    out.push_str("|\n");
    for r in &rows {
        let cells: Vec<&str> = r.cells.iter().map(|c| c.0.as_str()).collect();
        out.push_str(&format!("| {} | {} |", r.measure, cells.join(" | ")));
        if two {
            let ratio = match r.cells.as_slice() {
                [(_, Some(a)), (_, Some(b))] if *b > 0.0 => {
                    let mut t = format!("{:.2}", a / b);
                    if r.lower_is_better {
                        t.push_str(" (lower is better)");
                    }
                    t
                }
                _ => "—".into(),
            };
            out.push_str(&format!(" {ratio} |"));
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_servers_get_a_ratio_column_and_failures_show() {
        let idle = |before, after, open| {
            Some(Ok(Idle {
                rss_before_kib: before,
                rss_after_kib: after,
                open,
            }))
        };
        let cols = [
            Column {
                idle: idle(1000, 3000, 1000),
                ..Column::default()
            },
            Column {
                idle: idle(1000, 5000, 500),
                keep_alive: Some(Err("refused".into())),
                ..Column::default()
            },
        ];
        let plan = Plan {
            names: vec!["a", "b"],
            idle: 1000,
            held: vec![],
            keep_alive: 10,
            legit_every: Duration::from_millis(100),
        };
        let t = render(&plan, &cols);
        assert!(
            t.starts_with("| measure | a | b | ratio (a/b) |\n|---|---|---|---|\n"),
            "{t}"
        );
        // 2,000 KiB for 1,000 against 4,000 KiB for 500.
        assert!(
            t.contains("| **RSS per 1,000 idle connections, KiB** | 2000 | 8000 | 0.25 (lower is better) |"),
            "{t}"
        );
        assert!(t.contains("| 500 of 1000 |"), "{t}");
        assert!(t.contains("not run: refused"), "{t}");
        assert!(!t.contains("legitimate"), "{t}");
    }
}
