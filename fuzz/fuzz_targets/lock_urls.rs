//! The lenient URL readers of egress-lock (`lock_urls`, the sandbox scan's
//! view of a lockfile): the first byte picks the format, the rest is the
//! file. Every URL a requirements file yields is text of that file once its
//! line continuations (`\` at a line's end) are joined.
#![no_main]
use egress_lock::{lock_urls, LockFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = match pick % 3 {
        0 => LockFormat::Requirements,
        1 => LockFormat::UvLock,
        _ => LockFormat::PackageLock,
    };
    let Ok(urls) = lock_urls(format, "lock", text) else {
        return;
    };
    let joined = text.replace("\\\r\n", "").replace("\\\n", "");
    for url in &urls {
        assert!(!url.field.is_empty(), "{url:?}");
        if format == LockFormat::Requirements {
            assert!(!url.url.is_empty() && joined.contains(&url.url), "{url:?}");
            assert!(url.place.starts_with("line "), "{url:?}");
        }
    }
});
