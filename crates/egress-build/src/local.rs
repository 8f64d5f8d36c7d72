//! Files a lab adds from a directory of its own (`--dist`, `--npm-dist`,
//! `--apt-debs`): read whole, sorted by file name; files of another kind
//! are named on stderr and left.

use crate::error::BuildError;
use std::fs;
use std::path::{Path, PathBuf};

/// One file read from the directory.
pub(crate) struct LocalFile {
    pub path: PathBuf,
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Every regular file in `dir` whose name ends with one of `suffixes`,
/// sorted by name. `flag` names the option in errors and notes, `kind`
/// what the other files are not (`a .deb`).
pub(crate) fn read_dir(
    dir: &Path,
    flag: &'static str,
    suffixes: &[&str],
    kind: &str,
) -> Result<Vec<LocalFile>, BuildError> {
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| BuildError::Read {
            what: flag,
            path,
            cause,
        }
    };
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).map_err(fail(dir))? {
        let entry = entry.map_err(fail(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if !suffixes.iter().any(|x| name.ends_with(x)) || !path.is_file() {
            eprintln!("note: {flag} {}: {name} skipped: not {kind}", dir.display());
            continue;
        }
        found.push((name, path));
    }
    found.sort();
    found
        .into_iter()
        .map(|(name, path)| {
            let bytes = fs::read(&path).map_err(fail(&path))?;
            Ok(LocalFile { path, name, bytes })
        })
        .collect()
}
