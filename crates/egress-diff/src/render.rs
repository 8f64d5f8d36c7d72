//! The two outputs of a [`Diff`]: Markdown for a reviewer, JSON for tools.
//! Both are functions of the diff alone, so equal diffs print equal bytes.

use crate::{Counts, Diff, Ecosystem, FileChange, Flag, FlagKind, ProjectChange, SnapshotInfo};
use std::fmt::Write;

impl Diff {
    /// Pretty JSON with a final newline; fields in declaration order.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The reviewer's page: the snapshots, the counts and flags, then each
    /// addition with its flags, then the removals.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = self.write_markdown(&mut out);
        out
    }

    fn write_markdown(&self, out: &mut String) -> std::fmt::Result {
        writeln!(out, "# Snapshot diff\n")?;
        snapshot_line(out, "OLD", &self.old)?;
        snapshot_line(out, "NEW", &self.new)?;
        if self.new.parent.as_deref() == Some(self.old.id.as_str()) {
            writeln!(out, "- NEW is a layer on OLD")?;
        }
        writeln!(
            out,
            "- recent: uploaded within {} days before {} (NEW's `{}`)\n",
            self.recent.days, self.recent.cutoff, self.recent.cutoff_from
        )?;

        writeln!(out, "## Summary\n")?;
        writeln!(
            out,
            "| | projects added | projects removed | versions added | versions removed | files added | files removed |"
        )?;
        writeln!(out, "|---|---|---|---|---|---|---|")?;
        for (label, c) in [
            ("PyPI", &self.summary.pypi),
            ("npm", &self.summary.npm),
            ("apt", &self.summary.apt),
        ] {
            counts_row(out, label, c)?;
        }
        writeln!(out, "\n| flag | raised | why it matters |")?;
        writeln!(out, "|---|---|---|")?;
        for kind in FlagKind::ALL {
            let n = self.summary.flags.get(kind.as_str()).copied().unwrap_or(0);
            writeln!(out, "| `{}` | {n} | {} |", kind.as_str(), kind.meaning())?;
        }

        writeln!(out, "\n## Added\n")?;
        if self.added.is_empty() {
            writeln!(out, "Nothing.\n")?;
        }
        section(out, &self.added, true)?;
        writeln!(out, "## Removed\n")?;
        if self.removed.is_empty() {
            writeln!(out, "Nothing.\n")?;
        }
        section(out, &self.removed, false)?;
        Ok(())
    }
}

fn snapshot_line(out: &mut String, label: &str, s: &SnapshotInfo) -> std::fmt::Result {
    write!(out, "- {label}: `{}`, created {}", s.id, s.created)?;
    if let Some(cutoff) = &s.exclude_newer {
        write!(out, ", cutoff {cutoff}")?;
    }
    if let Some(parent) = &s.parent {
        write!(out, ", a layer on `{parent}`")?;
    }
    writeln!(out)
}

fn counts_row(out: &mut String, label: &str, c: &Counts) -> std::fmt::Result {
    writeln!(
        out,
        "| {label} | {} | {} | {} | {} | {} | {} |",
        c.projects_added,
        c.projects_removed,
        c.versions_added,
        c.versions_removed,
        c.files_added,
        c.files_removed
    )
}

fn flag_lines(out: &mut String, indent: &str, flags: &[Flag]) -> std::fmt::Result {
    for f in flags {
        writeln!(out, "{indent}- **FLAG {}**: {}", f.flag.as_str(), f.detail)?;
    }
    Ok(())
}

fn file_line(out: &mut String, f: &FileChange) -> std::fmt::Result {
    write!(out, "  - `{}` sha256 `{}`", f.name, f.sha256)?;
    if let Some(size) = f.size {
        write!(out, ", {}", egress_snapshot::human_size(size))?;
    }
    if let Some(t) = &f.uploaded {
        write!(out, ", uploaded {t}")?;
    }
    writeln!(out)?;
    flag_lines(out, "    ", &f.flags)
}

fn section(out: &mut String, list: &[ProjectChange], added: bool) -> std::fmt::Result {
    for eco in [Ecosystem::Pypi, Ecosystem::Npm, Ecosystem::Apt] {
        let mine: Vec<&ProjectChange> = list.iter().filter(|p| p.ecosystem == eco).collect();
        if mine.is_empty() {
            continue;
        }
        writeln!(out, "### {}\n", eco.label())?;
        for p in mine {
            let whole = match (p.whole, added) {
                (true, true) => " (new)",
                (true, false) => " (gone)",
                _ => "",
            };
            writeln!(out, "#### `{}`{whole}\n", p.name)?;
            flag_lines(out, "", &p.flags)?;
            for v in &p.versions {
                let whole = match (v.whole, added) {
                    (true, true) => " (new version)",
                    (true, false) => " (whole version)",
                    (false, true) => " (more files)",
                    (false, false) => " (some files)",
                };
                let version = if v.version.is_empty() {
                    "?"
                } else {
                    &v.version
                };
                writeln!(out, "- {version}{whole}")?;
                flag_lines(out, "  ", &v.flags)?;
                for f in &v.files {
                    file_line(out, f)?;
                }
            }
            writeln!(out)?;
        }
    }
    Ok(())
}
