//! What the positive controls establish, in terms every protocol shares: each
//! control's status, and the artifact the controls saw served. Each protocol
//! keeps its own facts beside these (`pypi::facts`, `npm::facts`), derived
//! from the controls' evidence alone, so that the live run and `report
//! verify` build the same facts. Also the lookups every judge uses to find an
//! exchange in a record.

use egress_model::{Exchange, ProbeRecord, Status, Url};

/// What every judge and shared collector may ask of a protocol's facts.
pub trait ControlFacts {
    /// The status of a control, by id; INCONCLUSIVE when it did not run.
    fn status(&self, control: &str) -> Status;
    /// The artifact (file, tarball) the controls saw served, if any: write
    /// attempts aim at it.
    fn served_artifact(&self) -> Option<Url>;
}

/// Status of each control, by id.
#[derive(Debug, Default, Clone)]
pub struct Controls(pub Vec<(String, Status)>);

impl Controls {
    /// The statuses of the control records among `records`.
    pub fn of(records: &[ProbeRecord]) -> Self {
        Self(
            records
                .iter()
                .filter(|r| is_control(&r.id))
                .map(|r| (r.id.clone(), r.status))
                .collect(),
        )
    }

    pub fn status(&self, control: &str) -> Status {
        self.0
            .iter()
            .find(|(id, _)| id == control)
            .map_or(Status::Inconclusive, |(_, s)| *s)
    }
}

/// Whether a recorded id names a positive control (`C.`).
pub fn is_control(id: &str) -> bool {
    id.starts_with("C.")
}

pub fn find<'a>(record: &'a ProbeRecord, label: &str) -> Option<&'a Exchange> {
    record.exchanges.iter().find(|e| e.label == label)
}

/// The last exchange of a redirect chain whose first exchange has `label`.
pub fn final_of<'a>(record: &'a ProbeRecord, label: &str) -> Option<&'a Exchange> {
    let mut chain = record.exchanges.iter().skip_while(|e| e.label != label);
    let mut last = chain.next()?;
    let follow = format!("{label} (redirect)");
    for e in chain {
        if e.label == follow {
            last = e;
        } else {
            break;
        }
    }
    Some(last)
}

pub fn success_body(ex: &Exchange) -> Option<&[u8]> {
    let r = ex.response.as_ref()?;
    if r.is_success() {
        r.full_body()
    } else {
        None
    }
}

/// The absolute URL an exchange requested: its absolute-form target, or its
/// origin-form target on the target's origin.
pub fn request_url(origin: &Url, ex: &Exchange) -> Url {
    let target = ex.request_target();
    if target.starts_with("http://") || target.starts_with("https://") {
        if let Ok(u) = Url::parse(&target) {
            return u;
        }
    }
    origin.with_path(&target)
}
