//! A sub-probe is one row of its protocol's table: a typed id, the predicate
//! it belongs to, a title and doc text (as docs/predicates.md has them), when
//! it is collected (phase and order), how ([`Collect`]) and its judge.
//!
//! A protocol is a [`Suite`]: its plan part, its control facts and its table.
//! Collection order ([`crate::driver`]), the catalogue, the report's row
//! order and the docs' sections all come from the table.

use crate::collect::{Collector, Evidence};
use crate::facts::ControlFacts;
use crate::judge::{Judge, Verdict};
use crate::plan::Plan;
use egress_model::ProbeRecord;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;

/// A sub-probe's stable id, e.g. `P3.connect`: `C.` for positive controls,
/// else the predicate and a name. Ids never change meaning; reports carry
/// them as strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubProbeId(&'static str);

impl SubProbeId {
    pub const fn new(id: &'static str) -> Self {
        Self(id)
    }

    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for SubProbeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl AsRef<str> for SubProbeId {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl PartialEq<&str> for SubProbeId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for SubProbeId {
    fn eq(&self, other: &String) -> bool {
        self.0 == other
    }
}

/// The six predicates, and the positive controls that every refusal needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Predicate {
    Control,
    P1,
    P2,
    P3,
    P4,
    P5,
    P6,
}

impl Predicate {
    /// The six predicates, in report order (controls aside).
    pub const ALL: [Predicate; 6] = [
        Predicate::P1,
        Predicate::P2,
        Predicate::P3,
        Predicate::P4,
        Predicate::P5,
        Predicate::P6,
    ];

    /// `C`, `P1` .. `P6`: the prefix of its sub-probes' ids.
    pub const fn as_str(self) -> &'static str {
        match self {
            Predicate::Control => "C",
            Predicate::P1 => "P1",
            Predicate::P2 => "P2",
            Predicate::P3 => "P3",
            Predicate::P4 => "P4",
            Predicate::P5 => "P5",
            Predicate::P6 => "P6",
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Predicate::Control => "positive controls",
            Predicate::P1 => "digest binding",
            Predicate::P2 => "replay only",
            Predicate::P3 => "no path passthrough",
            Predicate::P4 => "no build path",
            Predicate::P5 => "snapshot immutability",
            Predicate::P6 => "no control channel",
        }
    }
}

/// Each predicate with its name, in report order.
pub const PREDICATES: [(Predicate, &str); 6] = [
    (Predicate::P1, Predicate::P1.name()),
    (Predicate::P2, Predicate::P2.name()),
    (Predicate::P3, Predicate::P3.name()),
    (Predicate::P4, Predicate::P4.name()),
    (Predicate::P5, Predicate::P5.name()),
    (Predicate::P6, Predicate::P6.name()),
];

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for Predicate {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<&str> for Predicate {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// When a sub-probe is collected. A protocol walks the phases in the order
/// its [`Suite::PHASES`] gives; within a phase, entries go by `order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Positive controls, judged as they come: later controls and every
    /// other collector read their facts. The run stops after them when none
    /// of [`Suite::SERVING`] passed.
    Controls,
    /// While the target's caches are cold (a pull-through cache hands the
    /// client to its upstream on a slow first fetch).
    ColdCaches,
    /// Read-only probes.
    Reads,
    /// Changes made upstream mid-run, observed through the target.
    Upstream,
    /// Write attempts; a [`Collect::Bracket`] here looks before and after.
    Writes,
    /// Over the whole run, after everything else.
    WholeRun,
}

/// A collector that reads the plan and the control facts.
pub type CollectFn<S> = fn(&Collector<<S as Suite>::Packages>, &<S as Suite>::Facts) -> Evidence;

/// A collector that also reads the records collected before it.
pub type AfterRecordsFn<S> =
    fn(&Collector<<S as Suite>::Packages>, &<S as Suite>::Facts, &[ProbeRecord]) -> Evidence;

/// Adds to a bracket's evidence after the rest of its phase.
pub type AfterFn<S> = fn(&Collector<<S as Suite>::Packages>, &<S as Suite>::Facts, &mut Evidence);

/// How a sub-probe's evidence is gathered.
pub enum Collect<S: Suite> {
    Plain(CollectFn<S>),
    /// Also reads the records collected before it in this run (npm's
    /// publish uses the tokens that adduser was handed).
    AfterRecords(AfterRecordsFn<S>),
    /// Brackets every other entry of its phase: `before` runs first,
    /// `after` adds to the same evidence last.
    Bracket {
        before: CollectFn<S>,
        after: AfterFn<S>,
    },
    /// The controlled upstream's log over the whole run.
    UpstreamLog,
}

pub type JudgeFn<S> =
    fn(&Judge<<S as Suite>::Packages, <S as Suite>::Facts>, &ProbeRecord) -> Verdict;

/// One row of a protocol's table.
pub struct SubProbe<S: Suite> {
    pub id: SubProbeId,
    pub predicate: Predicate,
    /// As the sub-probe's heading in docs/predicates.md has it.
    pub title: &'static str,
    /// As docs/predicates.md has it, under the heading or in the row that
    /// names the id.
    pub doc: &'static str,
    pub phase: Phase,
    /// Place within the phase.
    pub order: u8,
    pub collect: Collect<S>,
    pub judge: JudgeFn<S>,
}

/// A registry protocol: what its plan names, what its controls establish,
/// and its sub-probes.
pub trait Suite: Sized + 'static {
    /// The packages a run of this protocol probes (the plan's own part).
    type Packages: Clone + fmt::Debug + PartialEq + Eq + Serialize + DeserializeOwned;
    /// What the controls establish, derived from their evidence alone.
    type Facts: ControlFacts;
    /// Every sub-probe, in report order: controls first.
    const TABLE: &'static [SubProbe<Self>];
    /// The phases in the order this protocol collects them.
    const PHASES: &'static [Phase];
    /// The run goes on past the controls only when one of these passed: a
    /// target that serves none of them gives no refusal any meaning.
    const SERVING: &'static [SubProbeId];

    /// Facts from already-judged control records.
    fn facts(plan: &Plan<Self::Packages>, records: &[ProbeRecord]) -> Self::Facts;

    /// Called before each control is collected, once the earlier ones are
    /// judged: a protocol may complete its plan from them (PyPI picks a
    /// present project from the root index). Must be idempotent.
    fn discover(_plan: &mut Plan<Self::Packages>, _records: &[ProbeRecord]) {}

    /// Present and absent package names, for the report's header.
    fn describe(packages: &Self::Packages) -> (Vec<String>, Vec<String>);

    /// What a standalone canary's plan fills in of a deployed check's (its
    /// `deployed.rs`; see `Plan::with_canary`); by default, nothing.
    fn take_canary(
        _packages: &mut Self::Packages,
        _up: &egress_model::UpstreamPlan,
        _default_absent: bool,
    ) -> Result<(), crate::deployed::CanaryPlanError> {
        Ok(())
    }

    /// The table's entry `id`.
    fn find(id: &str) -> Option<&'static SubProbe<Self>> {
        Self::TABLE.iter().find(|s| s.id == id)
    }
}
