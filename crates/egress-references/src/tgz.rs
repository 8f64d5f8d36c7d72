//! Reading one file out of a `.tar.gz` (an sdist, an npm tarball), as the
//! caching-proxy fixtures do when they "build" or "scan" what they cache.
//! Lenient where archives vary (ustar prefix or not), bounded in size.

/// At most this much is inflated from one archive.
const MAX_UNPACKED: usize = 64 * 1024 * 1024;

/// The bytes of the regular file `{top}/{name}` of a gzipped tar, where
/// `{top}` is the archive's one top-level directory (`package/` for npm,
/// `name-version/` for an sdist).
pub(crate) fn top_level_file(tgz: &[u8], name: &str) -> Option<Vec<u8>> {
    let tar = gunzip(tgz)?;
    let suffix = format!("/{name}");
    let mut at = 0;
    while let Some(h) = tar.get(at..at + 512) {
        if h.iter().all(|&b| b == 0) {
            return None;
        }
        let cstr = |b: &[u8]| {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).into_owned()
        };
        let entry = cstr(&h[..100]);
        let prefix = if &h[257..262] == b"ustar" {
            cstr(&h[345..500])
        } else {
            String::new()
        };
        let path = if prefix.is_empty() {
            entry
        } else {
            format!("{prefix}/{entry}")
        };
        let size = usize::from_str_radix(cstr(&h[124..136]).trim(), 8).ok()?;
        let data = tar.get(at + 512..(at + 512).checked_add(size)?)?;
        if matches!(h[156], b'0' | 0) && path.matches('/').count() == 1 && path.ends_with(&suffix) {
            return Some(data.to_vec());
        }
        at += 512 + size.next_multiple_of(512);
    }
    None
}

/// Inflates a gzip member (header fields skipped, trailer not checked).
fn gunzip(gz: &[u8]) -> Option<Vec<u8>> {
    if gz.len() < 18 || gz[..3] != [0x1f, 0x8b, 8] {
        return None;
    }
    let flags = gz[3];
    let mut at = 10;
    if flags & 4 != 0 {
        let len = usize::from(u16::from_le_bytes([*gz.get(at)?, *gz.get(at + 1)?]));
        at += 2 + len;
    }
    for bit in [8, 16] {
        if flags & bit != 0 {
            at += gz.get(at..)?.iter().position(|&b| b == 0)? + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    miniz_oxide::inflate::decompress_to_vec_with_limit(gz.get(at..)?, MAX_UNPACKED).ok()
}
