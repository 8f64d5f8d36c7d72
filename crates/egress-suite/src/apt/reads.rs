//! The resources P5 and P6 read again and compare: the signed `Release`,
//! the index and the control `.deb`, and the labels of P6.effect's reads
//! (P5.stable-bytes reads them too).

use super::facts::{label, Facts};
use super::plan::{archive, at, Collector};
use crate::collect::Evidence;

/// P6.effect's reads: twice before the write attempts, once after.
pub const EFFECT_BEFORE: &str = "before the write attempts";
pub const EFFECT_AGAIN: &str = "again before the write attempts";
pub const EFFECT_AFTER: &str = "after the write attempts";

/// The resources every P5 and P6 comparison reads: the signed `Release`,
/// the index, and the control `.deb`.
pub const WHATS: [&str; 3] = ["InRelease", "Packages index", "control .deb"];

/// Reads each of [`WHATS`] the target serves, labelled `"{when}: {what}"`.
pub fn read_all(c: &Collector, f: &Facts, ev: &mut Evidence, when: &str) {
    let Some(a) = archive(c) else { return };
    let p = &c.plan.packages;
    let [inrelease, index, deb] = WHATS;
    c.get_following(
        ev,
        &format!("{when}: {inrelease}"),
        &at(&a, &p.dist_path(label::INRELEASE)),
        None,
    );
    c.get_following(
        ev,
        &format!("{when}: {index}"),
        &at(&a, &p.dist_path(&f.packages_index(p))),
        None,
    );
    if let Some(d) = &f.control_deb {
        c.get_following(ev, &format!("{when}: {deb}"), &d.url, None);
    }
}
