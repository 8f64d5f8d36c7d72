//! The registry of protocols: the one place that names each of them. A plan's
//! packages say which protocol a run speaks (`"protocol": "pypi"` or `"npm"`
//! in JSON); everything generic reaches a protocol's table through here.
//!
//! Adding a protocol: a folder beside `pypi/` and `npm/` whose `Suite`
//! implementation holds its table, and one line in the `protocols!` call below.

use crate::driver::{self, Wire};
use crate::plan::Plan;
use crate::subprobe::{Predicate, SubProbe, SubProbeId, Suite};
use crate::verdicts;
use egress_model::{PredicateVerdict, ProbeRecord, Status};
use serde::{Deserialize, Serialize};

/// Something to do with a plan in its own protocol's terms.
trait Visit {
    type Out;
    fn visit<S: Suite>(
        self,
        plan: Plan<S::Packages>,
        wrap: fn(S::Packages) -> Packages,
    ) -> Self::Out;
}

macro_rules! protocols {
    ($($variant:ident: $suite:ty = $name:literal;)*) => {
        /// The registry protocols the suite speaks.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Protocol {
            $(#[serde(rename = $name)] $variant,)*
        }

        impl Protocol {
            pub const ALL: &'static [Protocol] = &[$(Protocol::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Protocol::$variant => $name,)*
                }
            }

            /// The ids of this protocol's sub-probes, in report order.
            pub fn ids(self) -> Vec<SubProbeId> {
                match self {
                    $(Protocol::$variant => <$suite>::TABLE.iter().map(|s| s.id).collect(),)*
                }
            }

            /// Each sub-probe's id, predicate, title and doc text, in
            /// report order (the rules of a SARIF log, the HTML report's
            /// sub-probe headings).
            pub fn docs(self) -> Vec<SubProbeDoc> {
                match self {
                    $(Protocol::$variant => <$suite>::TABLE.iter().map(SubProbeDoc::of).collect(),)*
                }
            }
        }

        /// What a run probes, in its protocol's terms.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(tag = "protocol")]
        pub enum Packages {
            $(#[serde(rename = $name)] $variant(<$suite as Suite>::Packages),)*
        }

        impl Packages {
            pub fn protocol(&self) -> Protocol {
                match self {
                    $(Packages::$variant(_) => Protocol::$variant,)*
                }
            }

            /// What a standalone canary's plan fills in, in each
            /// protocol's terms (`Suite::take_canary`); see
            /// `Plan::with_canary`.
            pub(crate) fn take_canary(
                &mut self,
                up: &crate::UpstreamPlan,
                default_absent: bool,
            ) -> Result<(), crate::deployed::CanaryPlanError> {
                match self {
                    $(Packages::$variant(p) => <$suite>::take_canary(p, up, default_absent),)*
                }
            }
        }

        fn visit<V: Visit>(plan: &Plan<Packages>, v: V) -> V::Out {
            match &plan.packages {
                $(Packages::$variant(p) => v.visit::<$suite>(plan.with(p.clone()), Packages::$variant),)*
            }
        }
    };
}

protocols! {
    Pypi: crate::pypi::Pypi = "pypi";
    Npm: crate::npm::Npm = "npm";
    Apt: crate::apt::Apt = "apt";
    Cargo: crate::cargo::Cargo = "cargo";
    Hf: crate::hf::Hf = "hf";
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Protocol {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What a table row says of its sub-probe, without its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubProbeDoc {
    pub id: SubProbeId,
    pub predicate: Predicate,
    pub title: &'static str,
    pub doc: &'static str,
}

impl SubProbeDoc {
    fn of<S: Suite>(s: &SubProbe<S>) -> Self {
        Self {
            id: s.id,
            predicate: s.predicate,
            title: s.title,
            doc: s.doc,
        }
    }
}

/// Not one of [`Protocol::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol {0:?}")]
pub struct UnknownProtocol(pub String);

impl std::str::FromStr for Protocol {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Self, UnknownProtocol> {
        Protocol::ALL
            .iter()
            .copied()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProtocol(s.to_string()))
    }
}

impl Plan<Packages> {
    pub fn protocol(&self) -> Protocol {
        self.packages.protocol()
    }

    /// Present and absent package names, for a report's header.
    pub fn describe(&self) -> (Vec<String>, Vec<String>) {
        struct Describe;
        impl Visit for Describe {
            type Out = (Vec<String>, Vec<String>);
            fn visit<S: Suite>(
                self,
                plan: Plan<S::Packages>,
                _: fn(S::Packages) -> Packages,
            ) -> Self::Out {
                S::describe(&plan.packages)
            }
        }
        visit(self, Describe)
    }
}

/// Collects every sub-probe of the plan's protocol: the plan (as the
/// controls completed it) and the records in table order, not yet judged.
pub fn collect(wire: &Wire, plan: &Plan<Packages>) -> (Plan<Packages>, Vec<ProbeRecord>) {
    struct Collect<'a, 'w>(&'a Wire<'w>);
    impl Visit for Collect<'_, '_> {
        type Out = (Plan<Packages>, Vec<ProbeRecord>);
        fn visit<S: Suite>(
            self,
            plan: Plan<S::Packages>,
            wrap: fn(S::Packages) -> Packages,
        ) -> Self::Out {
            let (plan, records) = driver::collect::<S>(self.0, plan);
            (plan.map(wrap), records)
        }
    }
    visit(plan, Collect(wire))
}

/// Derives every verdict of the records from their evidence, with the plan's
/// protocol's judges (see [`verdicts::judge_all`]).
pub fn judge_all(
    plan: &Plan<Packages>,
    records: &mut [ProbeRecord],
) -> (Vec<PredicateVerdict>, Status) {
    struct JudgeAll<'a>(&'a mut [ProbeRecord]);
    impl Visit for JudgeAll<'_> {
        type Out = (Vec<PredicateVerdict>, Status);
        fn visit<S: Suite>(
            self,
            plan: Plan<S::Packages>,
            _: fn(S::Packages) -> Packages,
        ) -> Self::Out {
            verdicts::judge_all::<S>(&plan, self.0)
        }
    }
    visit(plan, JudgeAll(records))
}
