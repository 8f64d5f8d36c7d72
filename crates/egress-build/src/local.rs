//! Files a lab adds from a directory of its own (`--dist`, `--npm-dist`,
//! `--apt-debs`): read whole, sorted by file name; files of another kind
//! are named on stderr and left.

use crate::error::BuildError;
use std::fs;
use std::path::{Path, PathBuf};

/// One file read from the directory.
pub(crate) struct LocalFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// Every regular file in `dir` whose name ends with one of `suffixes`,
/// sorted by name, read whole. `flag` names the option in errors and
/// notes, `kind` what the other files are not (`a .deb`).
pub(crate) fn read_dir(
    dir: &Path,
    flag: &'static str,
    suffixes: &[&str],
    kind: &str,
) -> Result<Vec<LocalFile>, BuildError> {
    list_dir(dir, flag, suffixes, kind)?
        .into_iter()
        .map(|(_, path)| {
            let bytes = fs::read(&path).map_err(fail(flag, &path))?;
            Ok(LocalFile { path, bytes })
        })
        .collect()
}

/// What [`read_dir`] reads, named and not read: `(file name, path)`, for a
/// caller that reads one file at a time (a directory of a million wheels
/// does not fit in memory).
pub(crate) fn list_dir(
    dir: &Path,
    flag: &'static str,
    suffixes: &[&str],
    kind: &str,
) -> Result<Vec<(String, PathBuf)>, BuildError> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).map_err(fail(flag, dir))? {
        let entry = entry.map_err(fail(flag, dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if !suffixes.iter().any(|x| name.ends_with(x)) || !path.is_file() {
            eprintln!("note: {flag} {}: {name} skipped: not {kind}", dir.display());
            continue;
        }
        found.push((name, path));
    }
    found.sort();
    Ok(found)
}

/// A read error of a file `flag` gave.
pub(crate) fn fail(flag: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BuildError {
    let path = path.to_path_buf();
    move |cause| BuildError::Read {
        what: flag,
        path,
        cause,
    }
}
