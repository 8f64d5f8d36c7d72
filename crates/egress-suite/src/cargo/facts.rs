//! What the cargo controls establish, derived from their evidence alone
//! (the live run and `report verify` both call [`derive()`]).

use super::doc::{self, Config, Line};
use super::plan::{Packages, Plan};
use crate::facts::{final_of, success_body, ControlFacts, Controls};
use egress_model::{ProbeRecord, Status, Url};

/// A judge of a cargo run.
pub type Judge<'a> = crate::judge::Judge<'a, Packages, Facts>;

/// Labels of the control exchanges; judges find exchanges by these.
pub mod label {
    pub const CONFIG: &str = "config.json";
    pub const INDEX: &str = "index file of a present crate";
    pub const CRATE: &str = ".crate of a present crate";
}

#[derive(Debug, Default, Clone)]
pub struct Facts {
    pub controls: Controls,
    /// The sparse index root.
    pub index: Option<Url>,
    pub config: Option<Config>,
    /// The lines the control crate's index file lists.
    pub lines: Vec<Line>,
    /// Where the `.crate` control downloaded the control line's file.
    pub crate_url: Option<Url>,
}

impl ControlFacts for Facts {
    fn status(&self, control: &str) -> Status {
        self.controls.status(control)
    }

    fn served_artifact(&self) -> Option<Url> {
        self.crate_url.clone()
    }
}

impl Facts {
    /// The line the `.crate` control takes: the first the control crate's
    /// index lists.
    pub fn control_line(&self) -> Option<&Line> {
        self.lines.first()
    }

    /// Where `line`'s `.crate` is downloaded, by `config.json`'s `dl`,
    /// resolved against the index root.
    pub fn download_url(&self, line: &Line) -> Option<Url> {
        let (c, index) = (self.config.as_ref()?, self.index.as_ref()?);
        index.join(&doc::download(&c.dl, line)).ok()
    }
}

fn passed<'a>(records: &'a [ProbeRecord], id: &str) -> Option<&'a ProbeRecord> {
    records
        .iter()
        .find(|r| r.id == id)
        .filter(|r| r.status == Status::Pass)
}

pub fn derive(plan: &Plan, records: &[ProbeRecord]) -> Facts {
    let mut n = Facts {
        index: plan.index().ok(),
        controls: Controls::of(records),
        ..Facts::default()
    };
    n.config = passed(records, "C.config")
        .and_then(|r| final_of(r, label::CONFIG))
        .and_then(success_body)
        .and_then(doc::config);
    n.lines = passed(records, "C.index")
        .and_then(|r| final_of(r, label::INDEX))
        .and_then(success_body)
        .and_then(doc::lines)
        .unwrap_or_default();
    if passed(records, "C.crate").is_some() {
        n.crate_url = n.control_line().and_then(|l| n.download_url(l));
    }
    n
}
