//! A corpus of cases (the smuggling payloads, the HTTP/2 abuses): sent
//! many at once in their order, each judged on its own, and the judgements
//! gathered into what the sub-probe's verdict says.

use crate::classify;
use crate::judge::short;
use egress_model::{Exchange, ProbeRecord};

/// How many cases are in flight at once.
pub const WORKERS: usize = 4;

/// `send` applied to every item, by [`WORKERS`] threads at once (item `i`
/// on thread `i % WORKERS`), the results in the items' order. A thread
/// that panics loses its results, never the others'.
pub fn in_order<T: Sync, R: Send>(items: &[T], send: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let send = &send;
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                s.spawn(move || {
                    items
                        .iter()
                        .enumerate()
                        .skip(w)
                        .step_by(WORKERS)
                        .map(|(i, item)| (i, send(item)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// How one case went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseVerdict {
    /// Refused: how (`400`, `closed`, `reset PROTOCOL_ERROR`, `GOAWAY …`).
    Refused(String),
    /// Taken as valid, passed on or answered out of step: why, naming the
    /// case and the evidence.
    Fail(String),
    /// Neither shown (left open, not sent, no control).
    Unclear(String),
}

impl CaseVerdict {
    /// A FAIL naming the case and every fault, when there is one.
    pub fn from_faults(id: &str, what: &str, faults: &[String]) -> Option<Self> {
        (!faults.is_empty()).then(|| Self::Fail(format!("{id} ({what}): {}", faults.join("; "))))
    }
}

/// The first request in the upstream's log that carries one of the marker
/// tokens of the case's request, as `METHOD target`: the case was passed on.
pub fn reached_upstream(ex: &Exchange, record: &ProbeRecord) -> Option<String> {
    let tokens = classify::tokens_in(ex.request.as_bytes());
    classify::upstream_log(record)
        .find(|u| tokens.iter().any(|t| u.target.contains(t.as_str())))
        .map(|u| format!("{} {}", u.method, short(&u.target)))
}

/// Every case's verdict, sorted into the three kinds.
#[derive(Debug, Default)]
pub struct Outcomes {
    pub refused: Vec<String>,
    /// `(case id, why)`.
    pub fails: Vec<(&'static str, String)>,
    pub unclear: Vec<String>,
}

impl Outcomes {
    pub fn add(&mut self, id: &'static str, verdict: Option<CaseVerdict>) {
        match verdict {
            Some(CaseVerdict::Refused(s)) => self.refused.push(s),
            Some(CaseVerdict::Fail(why)) => self.fails.push((id, why)),
            Some(CaseVerdict::Unclear(why)) => self.unclear.push(why),
            None => self.unclear.push(format!("{id}: not recorded")),
        }
    }

    /// The first failure in full, then the other failing cases by id (at
    /// most `named` of them, then how many more); `None` when none failed.
    pub fn first_fail(&self, named: usize) -> Option<String> {
        let (_, first) = self.fails.first()?;
        let others: Vec<&str> = self.fails.iter().skip(1).map(|(id, _)| *id).collect();
        let shown = others
            .iter()
            .take(named)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        Some(match others.len() {
            0 => first.clone(),
            n if n <= named => format!("{first}; also {shown}"),
            n => format!("{first}; also {shown} and {} more", n - named),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_name_the_first_failure_and_count_the_rest() {
        let mut o = Outcomes::default();
        assert_eq!(o.first_fail(2), None);
        o.add("a", Some(CaseVerdict::Refused("400".into())));
        o.add("b", None);
        o.add(
            "c",
            CaseVerdict::from_faults("c", "what", &["x".into(), "y".into()]),
        );
        assert_eq!(o.first_fail(2).as_deref(), Some("c (what): x; y"));
        for id in ["d", "e", "f"] {
            o.add(id, Some(CaseVerdict::Fail(id.into())));
        }
        assert_eq!(
            o.first_fail(2).as_deref(),
            Some("c (what): x; y; also d, e and 1 more")
        );
        assert_eq!(
            o.first_fail(3).as_deref(),
            Some("c (what): x; y; also d, e, f")
        );
        assert_eq!(
            (o.refused.len(), o.unclear.as_slice()),
            (1, &["b: not recorded".to_string()][..])
        );
        assert_eq!(CaseVerdict::from_faults("z", "w", &[]), None);
    }

    #[test]
    fn keeps_the_order() {
        let items: Vec<u32> = (0..23).collect();
        assert_eq!(
            super::in_order(&items, |i| i * 2),
            (0..23).map(|i| i * 2).collect::<Vec<_>>()
        );
    }
}
