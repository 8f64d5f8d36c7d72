//! Fetching for a snapshot build, for every protocol: whole documents (an
//! index page, a packument) and files, with retries, backoff and
//! resumption.
//!
//! Nothing fetched here is trusted: documents only say where a pinned
//! digest can be found, and a file counts only once its bytes hash to the
//! lock's digest.

use crate::progress::Progress;
use egress_model::{BodyEnd, Sha256Digest, Url};
use egress_transcript::{BodySink, Client, Limits, Request};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::thread;
use std::time::Duration;

/// Tries per page or file; a transient failure (no answer, 408, 429, 5xx,
/// a body cut short) is retried after a backoff, anything else is final.
pub(crate) const ATTEMPTS: u32 = 3;

/// Largest document read. PyPI's largest project pages are a few MB.
const MAX_PAGE: usize = 64 * 1024 * 1024;

#[derive(Debug)]
pub(crate) enum FetchError {
    /// The file's bytes do not hash to the lock's digest.
    Mismatch {
        expected: Sha256Digest,
        actual: Sha256Digest,
    },
    /// The file's bytes do not match the lock's sha512 integrity (npm);
    /// both as `sha512-<base64>`.
    IntegrityMismatch { expected: String, actual: String },
    /// The index answered, and the answer means no (404, a bad page).
    Refused(String),
    /// Could not get an answer, even after retries.
    Failed(String),
}

/// Bounds for page fetches: whole pages are kept to be parsed.
pub(crate) fn page_limits() -> Limits {
    Limits {
        deadline: Duration::from_secs(120),
        max_body_bytes: MAX_PAGE as u64,
        record_bytes: MAX_PAGE,
        ..Limits::default()
    }
}

fn transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500u64 << attempt.min(6))
}

/// Counts a failed try; `Err` once they are used up, or at once for a
/// certificate nobody here trusts (no retry changes that).
fn retry(attempt: &mut u32, what: &str, why: &str, progress: &Progress) -> Result<(), FetchError> {
    if egress_transcript::is_untrusted_certificate(why) {
        return Err(FetchError::Failed(format!("{what}: {why}")));
    }
    *attempt += 1;
    if *attempt >= ATTEMPTS {
        return Err(FetchError::Failed(format!(
            "{what}: {why} (gave up after {ATTEMPTS} attempts)"
        )));
    }
    progress.say(&format!(
        "retrying {what}: {why} (attempt {}/{ATTEMPTS})",
        *attempt + 1
    ));
    thread::sleep(backoff(*attempt - 1));
    Ok(())
}

/// The final answer to a GET of a whole document: the URL it came from
/// (after same-origin redirects) and its status, with the body when it is
/// a 200.
pub(crate) struct Answer {
    pub(crate) url: Url,
    pub(crate) status: u16,
    pub(crate) status_line: String,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Option<Vec<u8>>,
    /// The `Link` header's `rel="next"` target, as given (a paginated
    /// listing: the Hub's trees).
    pub(crate) next: Option<String>,
}

/// The target of `rel="next"` in a `Link` header value.
fn link_next(value: &str) -> Option<String> {
    value.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p == "rel=\"next\"" || p == "rel=next"
            })
            .then(|| target.to_string())
    })
}

/// The most pages [`pages`] follows.
const MAX_PAGES: usize = 10_000;

/// GETs a paginated JSON listing at `url` and every page its
/// `Link: <...>; rel="next"` leads to, on the same origin, at most
/// [`MAX_PAGES`]; each page's body. A 4xx on the first page is
/// [`Document::NotProvided`]'s status as an error of its own kind.
pub(crate) fn pages(
    client: &Client,
    url: &Url,
    accept: &str,
    progress: &Progress,
) -> Result<Result<Vec<Vec<u8>>, u16>, FetchError> {
    let mut out = Vec::new();
    let mut at = url.clone();
    loop {
        let answer = get_whole(client, &at, accept, "listing", progress)?;
        match (answer.status, answer.body) {
            (200, Some(body)) => out.push(body),
            (s @ 400..=499, _) if out.is_empty() => return Ok(Err(s)),
            (s, _) => {
                return Err(FetchError::Refused(format!(
                    "{}: HTTP {s} ({})",
                    answer.url, answer.status_line
                )))
            }
        }
        let Some(next) = answer.next else {
            return Ok(Ok(out));
        };
        let next = answer
            .url
            .join(&next)
            .ok()
            .filter(|n| n.same_origin(url))
            .ok_or_else(|| {
                FetchError::Refused(format!(
                    "{}: a next page off its origin: {next}",
                    answer.url
                ))
            })?;
        if out.len() >= MAX_PAGES {
            return Err(FetchError::Refused(format!(
                "{url}: more than {MAX_PAGES} pages"
            )));
        }
        at = next;
    }
}

/// GETs `url` whole, following at most three redirects within its origin
/// and retrying transient failures (no answer, a body cut short, 408, 429,
/// 5xx). Every other status is the answer, for the caller to read. `what`
/// names the document in messages.
pub(crate) fn get_whole(
    client: &Client,
    url: &Url,
    accept: &str,
    what: &str,
    progress: &Progress,
) -> Result<Answer, FetchError> {
    let mut url = url.clone();
    let mut redirects = 0;
    let mut attempt = 0;
    loop {
        let ex = client.get(&format!("{what} {url}"), url.path_and_query(), Some(accept));
        let why = ex.error.clone().unwrap_or_else(|| "no response".into());
        let Some(resp) = ex.response else {
            retry(&mut attempt, &url.to_string(), &why, progress)?;
            continue;
        };
        let status = resp.status.unwrap_or(0);
        match status {
            200 => {
                if resp.body_end == BodyEnd::CapReached {
                    return Err(FetchError::Refused(format!(
                        "{url}: the {what} is larger than {MAX_PAGE} bytes"
                    )));
                }
                let Some(body) = resp.full_body() else {
                    retry(&mut attempt, &url.to_string(), &why, progress)?;
                    continue;
                };
                return Ok(Answer {
                    next: resp.header("link").and_then(link_next),
                    content_type: resp.header("content-type").map(str::to_ascii_lowercase),
                    body: Some(body.to_vec()),
                    status,
                    status_line: resp.status_line.clone(),
                    url,
                });
            }
            301 | 302 | 303 | 307 | 308 => {
                let next = resp
                    .header("location")
                    .and_then(|l| url.join(l).ok())
                    .filter(|n| n.same_origin(&url))
                    .ok_or_else(|| {
                        FetchError::Refused(format!(
                            "{url}: redirect {status} without a Location on the same origin"
                        ))
                    })?;
                redirects += 1;
                if redirects > 3 {
                    return Err(FetchError::Refused(format!("{url}: too many redirects")));
                }
                url = next;
            }
            s if transient(s) => retry(
                &mut attempt,
                &url.to_string(),
                &format!("HTTP {s}"),
                progress,
            )?,
            _ => {
                return Ok(Answer {
                    next: None,
                    content_type: None,
                    body: None,
                    status,
                    status_line: resp.status_line.clone(),
                    url,
                })
            }
        }
    }
}

/// What a registry answered for a JSON document (an npm packument, the
/// keys document).
#[derive(Debug)]
pub(crate) enum Document {
    /// 200 and the whole body.
    Body(Vec<u8>),
    /// A 4xx: the registry does not provide it (npm itself treats 404 and
    /// 400 from the keys route as "no keys"; 401 and 403 mean the same to
    /// a build without credentials).
    NotProvided(u16),
}

/// GETs a JSON document at `url` (same-origin redirects followed, at most
/// three). Transient failures are retried; a 5xx or no answer after the
/// last try, an off-origin redirect or a body over the page cap is an
/// error.
pub(crate) fn document(
    client: &Client,
    url: &Url,
    accept: &str,
    progress: &Progress,
) -> Result<Document, FetchError> {
    let answer = get_whole(client, url, accept, "document", progress)?;
    match (answer.status, answer.body) {
        (200, Some(body)) => Ok(Document::Body(body)),
        (s @ 400..=499, _) => Ok(Document::NotProvided(s)),
        (s, _) => Err(FetchError::Refused(format!(
            "{}: HTTP {s} ({})",
            answer.url, answer.status_line
        ))),
    }
}

/// One client per origin of `urls` (a lock or a universe may name more
/// than one registry), each bounded by `limits`.
pub(crate) fn clients_by_origin<'a>(
    urls: impl IntoIterator<Item = &'a Url>,
    limits: Limits,
    cacert: Option<&Path>,
) -> Result<std::collections::HashMap<String, Client>, egress_transcript::ClientError> {
    let mut clients = std::collections::HashMap::new();
    for url in urls {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(url.origin()) {
            slot.insert(Client::new(url.clone(), limits, cacert)?);
        }
    }
    Ok(clients)
}

/// The digest a download must match before it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// A PyPI lock's sha256.
    Sha256(Sha256Digest),
    /// An npm lock's integrity, `sha512-<base64>`.
    Sri512(String),
    /// A Hugging Face regular file's git blob id, as its tree lists it.
    GitBlob(egress_model::GitBlobId),
}

impl Expect {
    /// A name for the partial file of a download of `url`: one per digest
    /// (PyPI digests are unique per build), or per URL and integrity (two
    /// npm packages may be locked with the same bytes).
    pub(crate) fn part_name(&self, url: &Url) -> String {
        match self {
            Self::Sha256(d) => format!("{}.part", d.to_hex()),
            Self::Sri512(sri) => format!(
                "npm-{}.part",
                Sha256Digest::of(format!("{url} {sri}").as_bytes()).to_hex()
            ),
            Self::GitBlob(id) => format!("git-{}.part", id.to_hex()),
        }
    }
}

/// One file to download.
#[derive(Debug, Clone)]
pub(crate) struct FileJob {
    pub(crate) filename: String,
    pub(crate) url: Url,
    /// What the bytes must hash to.
    pub(crate) expect: Expect,
    /// As the index announced it; used only to spot a stale partial file.
    pub(crate) size: Option<u64>,
}

/// One job's result in [`download_each`]: `None` when a failure stopped it
/// before it started.
pub(crate) type Downloaded = Option<Result<Vec<u8>, FetchError>>;

/// Downloads every job in parallel (`jobs` at a time), each into its
/// partial file in `work` and verified against its `expect`, the first
/// failure stopping the ones not yet started (their result `None`); `what`
/// names the files in the one line said before (`fetching 12 crates`).
/// Each result is the verified bytes, in the order of `jobs`.
pub(crate) fn download_each(
    jobs: &[&FileJob],
    parallel: usize,
    cacert: Option<&Path>,
    work: &Path,
    what: &str,
) -> Result<Vec<Downloaded>, egress_transcript::ClientError> {
    let clients = clients_by_origin(jobs.iter().map(|j| &j.url), Limits::download(), cacert)?;
    if !jobs.is_empty() && !crate::progress::is_quiet() {
        eprintln!("fetching {} {what}", jobs.len());
    }
    let progress = Progress::new(jobs.len(), 0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let results = egress_snapshot::pool::map(jobs, parallel, |job| {
        use std::sync::atomic::Ordering;
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let Some(client) = clients.get(&job.url.origin()) else {
            return Some(Err(FetchError::Failed(format!("{}: no client", job.url))));
        };
        let part = work.join(job.expect.part_name(&job.url));
        let r = download(client, job, &part, &progress);
        match &r {
            Ok(bytes) => {
                let _ = fs::remove_file(&part);
                progress.done(&job.filename, bytes.len() as u64, "");
            }
            Err(_) => stop.store(true, Ordering::Relaxed),
        }
        Some(r)
    });
    progress.finish();
    Ok(results)
}

/// `Content-Range: bytes N-M/T` -> N.
fn range_start(headers: &[(String, String)]) -> Option<u64> {
    let v = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-range"))?
        .1
        .trim();
    v.strip_prefix("bytes ")?
        .split('-')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Streams a body into the partial file: appended after `offset` bytes on
/// a 206 that starts there, from scratch on a 200.
struct PartSink<'a> {
    path: &'a Path,
    offset: u64,
    out: Option<BufWriter<File>>,
    progress: &'a Progress,
    written: u64,
}

impl BodySink for PartSink<'_> {
    fn begin(&mut self, status: u16, headers: &[(String, String)]) -> io::Result<bool> {
        let file = match status {
            206 if self.offset > 0 && range_start(headers) == Some(self.offset) => {
                OpenOptions::new().append(true).open(self.path)?
            }
            200 => {
                self.offset = 0;
                File::create(self.path)?
            }
            _ => return Ok(false),
        };
        self.out = Some(BufWriter::with_capacity(256 * 1024, file));
        Ok(true)
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| io::Error::other("body before begin"))?;
        out.write_all(data)?;
        self.written += data.len() as u64;
        self.progress.add(data.len() as u64);
        Ok(())
    }
}

/// Downloads `job` into `part` (resuming what is already there) and returns
/// the bytes once they hash to `job.expect`. A partial file left by an
/// earlier run may hold other bytes; if the result does not match after
/// resuming, the file is fetched once more from the start before the
/// mismatch counts.
pub(crate) fn download(
    client: &Client,
    job: &FileJob,
    part: &Path,
    progress: &Progress,
) -> Result<Vec<u8>, FetchError> {
    let what = job.url.to_string();
    let mut attempt = 0;
    let mut counted = 0u64;
    let mut restarted_after_mismatch = false;
    progress.start(&job.filename);
    loop {
        let mut have = fs::metadata(part).map_or(0, |m| m.len());
        if job.size.is_some_and(|s| have > s) {
            let _ = fs::remove_file(part);
            have = 0;
        }
        // A partial file as long as the announced size is checked as it is.
        let resumed = have > 0;
        // Whether the bytes come from more than one response.
        let mut spliced = resumed;
        if !(resumed && job.size == Some(have)) {
            let mut req = Request::get(job.url.path_and_query());
            let range = format!("bytes={have}-");
            if resumed {
                req = req.header("Range", &range);
            }
            let mut sink = PartSink {
                path: part,
                offset: have,
                out: None,
                progress,
                written: 0,
            };
            let ex = client.download(&format!("download {}", job.filename), &req, &mut sink);
            let taken = sink.out.is_some();
            if let Some(mut w) = sink.out.take() {
                w.flush().map_err(|e| {
                    FetchError::Failed(format!("cannot write {}: {e}", part.display()))
                })?;
            }
            spliced = taken && sink.offset > 0;
            if resumed && taken && sink.offset == 0 {
                // The server sent the whole file again (200): what was
                // counted for the old partial file was replaced.
                progress.discard(counted);
                counted = 0;
            }
            counted += sink.written;
            let why = ex.error.clone().unwrap_or_else(|| "no response".into());
            let Some(resp) = ex.response else {
                retry(&mut attempt, &what, &why, progress)?;
                continue;
            };
            let status = resp.status.unwrap_or(0);
            if let Some(e) = ex
                .error
                .as_deref()
                .filter(|e| e.starts_with("cannot store"))
            {
                return Err(FetchError::Failed(format!("{}: {e}", part.display())));
            }
            if !taken {
                if matches!(status, 206 | 416) && resumed {
                    // The server did not resume where asked; start over.
                    let _ = fs::remove_file(part);
                    let why = format!("HTTP {status} to a range request");
                    retry(&mut attempt, &what, &why, progress)?;
                    continue;
                }
                if transient(status) {
                    retry(&mut attempt, &what, &format!("HTTP {status}"), progress)?;
                    continue;
                }
                return Err(FetchError::Refused(format!(
                    "{what}: HTTP {status} ({})",
                    resp.status_line
                )));
            }
            if resp.body_end != BodyEnd::Complete {
                // Keep what arrived: the next try resumes after it.
                retry(&mut attempt, &what, &why, progress)?;
                continue;
            }
        }
        let bytes = fs::read(part)
            .map_err(|e| FetchError::Failed(format!("cannot read {}: {e}", part.display())))?;
        let mismatch = match &job.expect {
            Expect::Sha256(expected) => {
                let actual = Sha256Digest::of(&bytes);
                (actual != *expected).then_some(FetchError::Mismatch {
                    expected: *expected,
                    actual,
                })
            }
            Expect::Sri512(expected) => {
                let actual = egress_artifacts::sri_sha512(&bytes);
                (actual != *expected).then(|| FetchError::IntegrityMismatch {
                    expected: expected.clone(),
                    actual,
                })
            }
            Expect::GitBlob(expected) => {
                let actual = egress_model::GitBlobId::of_blob(&bytes);
                (actual != *expected).then(|| FetchError::IntegrityMismatch {
                    expected: format!("git blob {expected}"),
                    actual: format!("git blob {actual}"),
                })
            }
        };
        let Some(mismatch) = mismatch else {
            return Ok(bytes);
        };
        if spliced && !restarted_after_mismatch {
            restarted_after_mismatch = true;
            let _ = fs::remove_file(part);
            progress.discard(counted);
            counted = 0;
            progress.say(&format!(
                "{}: the resumed download does not match its digest; fetching it again from the start",
                job.filename
            ));
            continue;
        }
        return Err(mismatch);
    }
}

/// Scripted loopback servers for the fetch tests here and in the protocols.
#[cfg(test)]
pub(crate) mod testing {
    use egress_model::Url;
    use egress_transcript::{Client, Limits};
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::Duration;

    /// A server that answers each connection with the next scripted reply,
    /// and records the requests.
    pub(crate) fn script(replies: Vec<Vec<u8>>) -> (Url, Arc<Mutex<Vec<String>>>) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        thread::spawn(move || {
            for reply in replies {
                let Ok((mut s, _)) = l.accept() else { return };
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).unwrap_or(0);
                log.lock()
                    .expect("log")
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let _ = s.write_all(&reply);
            }
        });
        let url = Url::parse(&format!("http://127.0.0.1:{port}/f/x-1.0.tar.gz")).expect("url");
        (url, seen)
    }

    pub(crate) fn client(url: &Url) -> Client {
        let limits = Limits {
            idle_timeout: Duration::from_secs(2),
            ..Limits::download()
        };
        Client::new(url.clone(), limits, None).expect("client")
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{client, script};
    use super::*;

    fn job(url: &Url, body: &[u8]) -> FileJob {
        FileJob {
            filename: "x-1.0.tar.gz".into(),
            url: url.clone(),
            expect: Expect::Sha256(Sha256Digest::of(body)),
            size: Some(body.len() as u64),
        }
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("egress-fetch-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn link_next_targets() {
        assert_eq!(
            link_next("<https://h/api/x?cursor=a>; rel=\"next\""),
            Some("https://h/api/x?cursor=a".to_string())
        );
        assert_eq!(
            link_next("<a>; rel=\"prev\", <b>; rel=\"next\""),
            Some("b".to_string())
        );
        for none in ["", "<a>", "a; rel=next", "<a>; rel=\"prev\""] {
            assert_eq!(link_next(none), None, "{none}");
        }
    }

    #[test]
    fn a_cut_body_is_resumed_with_a_range_request() {
        let body: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
        let mut first =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        first.extend_from_slice(&body[..20_000]);
        let mut second = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 20000-{}/{}\r\nContent-Length: {}\r\n\r\n",
            body.len() - 1,
            body.len(),
            body.len() - 20_000
        )
        .into_bytes();
        second.extend_from_slice(&body[20_000..]);
        let (url, seen) = script(vec![first, second]);
        let dir = tmp("resume");
        let part = dir.join("x.part");
        let progress = Progress::new(1, 0);
        let got = download(&client(&url), &job(&url, &body), &part, &progress).expect("download");
        assert_eq!(got, body);
        let seen = seen.lock().expect("log");
        assert!(!seen[0].contains("Range:"), "{}", seen[0]);
        assert!(
            seen[1].contains("\r\nRange: bytes=20000-\r\n"),
            "{}",
            seen[1]
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stale_partial_file_is_fetched_again_and_a_200_restarts() {
        let body = b"the real bytes of the file".to_vec();
        let dir = tmp("stale");
        let part = dir.join("x.part");
        fs::write(&part, b"garbage").expect("write");
        // The server ignores Range (200) the first time; the stale prefix is
        // replaced, not appended to.
        let mut ok =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        ok.extend_from_slice(&body);
        let (url, seen) = script(vec![ok]);
        let progress = Progress::new(1, 0);
        let got = download(&client(&url), &job(&url, &body), &part, &progress).expect("download");
        assert_eq!(got, body);
        assert!(seen.lock().expect("log")[0].contains("Range: bytes=7-"));

        // A stale file that resumes "successfully" but hashes wrong is
        // fetched once more from the start.
        fs::write(&part, b"XXXXXXX").expect("write");
        let mut rest = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 7-{}/{}\r\nContent-Length: {}\r\n\r\n",
            body.len() - 1,
            body.len(),
            body.len() - 7
        )
        .into_bytes();
        rest.extend_from_slice(&body[7..]);
        let mut full =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        full.extend_from_slice(&body);
        let (url, seen) = script(vec![rest, full]);
        let got = download(&client(&url), &job(&url, &body), &part, &progress).expect("download");
        assert_eq!(got, body);
        assert!(!seen.lock().expect("log")[1].contains("Range:"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn mismatch_404_and_exhausted_retries() {
        let body = b"bytes".to_vec();
        let dir = tmp("errors");
        let part = dir.join("x.part");
        let progress = Progress::new(1, 0);
        let other = b"other".to_vec();
        let mut wrong =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", other.len()).into_bytes();
        wrong.extend_from_slice(&other);
        let (url, _) = script(vec![wrong]);
        match download(&client(&url), &job(&url, &body), &part, &progress) {
            Err(FetchError::Mismatch { expected, actual }) => {
                assert_eq!(
                    (expected, actual),
                    (Sha256Digest::of(&body), Sha256Digest::of(&other))
                );
            }
            other => panic!("{other:?}"),
        }
        let _ = fs::remove_file(&part);
        let (url, _) = script(vec![
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec()
        ]);
        assert!(matches!(
            download(&client(&url), &job(&url, &body), &part, &progress),
            Err(FetchError::Refused(m)) if m.contains("HTTP 404")
        ));
        let busy = b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n".to_vec();
        let (url, seen) = script(vec![busy.clone(), busy.clone(), busy]);
        assert!(matches!(
            download(&client(&url), &job(&url, &body), &part, &progress),
            Err(FetchError::Failed(m)) if m.contains("after 3 attempts")
        ));
        assert_eq!(seen.lock().expect("log").len(), 3);
        let _ = fs::remove_dir_all(&dir);
    }
}
