//! Writing files beside a snapshot: each is written to a temporary sibling
//! and renamed into place, so a reader never sees half a file and an
//! interrupted run never leaves one behind.

use std::fs;
use std::io::Write;
use std::path::Path;

pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A file [`write_files`] could not write (or the directory it could not
/// make).
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {cause}", .path.display())]
pub struct WriteError {
    pub path: std::path::PathBuf,
    #[source]
    pub cause: std::io::Error,
}

/// Writes each `(name, body)` into `dir` (made first, with its parents),
/// in order, each with [`write_atomic`]: a reader never sees half a file
/// and an interrupted run never leaves one behind.
pub fn write_files<N: AsRef<Path>, B: AsRef<[u8]>>(
    dir: &Path,
    files: &[(N, B)],
) -> Result<(), WriteError> {
    fs::create_dir_all(dir).map_err(|cause| WriteError {
        path: dir.to_path_buf(),
        cause,
    })?;
    for (name, body) in files {
        let path = dir.join(name);
        write_atomic(&path, body.as_ref()).map_err(|cause| WriteError { path, cause })?;
    }
    Ok(())
}

/// Writes `bytes` to a temporary sibling with `mode`, then links it to
/// `path`: `link(2)` fails if `path` exists, so an existing file is never
/// replaced, even by a race, and `path` never holds half a file.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::hard_link(&tmp, path)
    })();
    let _ = fs::remove_file(&tmp);
    result
}
