//! The one way this crate opens a file inside a snapshot: never through a
//! symlink at its last component, never blocking on a FIFO, and only a
//! regular file.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// Why [`open_no_follow`] gave no file.
#[derive(Debug, thiserror::Error)]
pub enum NoFollowError {
    #[error("missing")]
    Missing,
    #[error("a symlink")]
    Symlink,
    #[error("not a regular file")]
    NotAFile,
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<NoFollowError> for crate::BlobProblemKind {
    fn from(e: NoFollowError) -> Self {
        match e {
            NoFollowError::Missing => Self::Missing,
            NoFollowError::Symlink => Self::Symlink,
            NoFollowError::NotAFile => Self::NotAFile,
            NoFollowError::Io(e) => Self::Unreadable(e.to_string()),
        }
    }
}

/// Opens a regular file for reading without following a symlink at its last
/// component (`O_NOFOLLOW`) and without blocking if it is a FIFO
/// (`O_NONBLOCK`, which regular files ignore), then checks through the
/// handle (`fstat`) that it is a regular file. The caller makes sure no
/// directory above it is a symlink.
pub fn open_no_follow(path: &Path) -> Result<File, NoFollowError> {
    let file = open_raw(path).map_err(|e| {
        let meta = fs::symlink_metadata(path);
        if e.kind() == io::ErrorKind::NotFound {
            NoFollowError::Missing
        } else if is_loop(&e) || meta.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
            NoFollowError::Symlink
        } else if meta.is_ok_and(|m| !m.is_file()) {
            NoFollowError::NotAFile
        } else {
            NoFollowError::Io(e)
        }
    })?;
    if !file.metadata()?.is_file() {
        return Err(NoFollowError::NotAFile);
    }
    Ok(file)
}

/// Reads a whole regular file through [`open_no_follow`].
pub fn read_no_follow(path: &Path) -> Result<Vec<u8>, NoFollowError> {
    use std::io::Read;
    let mut file = open_no_follow(path)?;
    let len = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(unix)]
fn open_raw(path: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::open(path, flags, Mode::empty())?))
}

#[cfg(unix)]
fn is_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

/// Without `O_NOFOLLOW`: `lstat`, then open; a swap between the two is not
/// caught here.
#[cfg(not(unix))]
fn open_raw(path: &Path) -> io::Result<File> {
    if fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::other("a symlink"));
    }
    File::open(path)
}

#[cfg(not(unix))]
fn is_loop(_: &io::Error) -> bool {
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn refuses_symlinks_fifos_and_directories() {
        let dir = std::env::temp_dir().join(format!("nofollow-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("file"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.join("file"), dir.join("link")).unwrap();
        assert_eq!(read_no_follow(&dir.join("file")).unwrap(), b"x");
        assert!(matches!(
            open_no_follow(&dir.join("link")),
            Err(NoFollowError::Symlink)
        ));
        assert!(matches!(
            open_no_follow(&dir.join("sub")),
            Err(NoFollowError::NotAFile)
        ));
        assert!(matches!(
            open_no_follow(&dir.join("none")),
            Err(NoFollowError::Missing)
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
