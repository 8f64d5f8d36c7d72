//! The cargo canary upstream: a sparse registry the tests control.
//!
//! **Test fixture.** It binds to 127.0.0.1 only and never connects anywhere.
//!
//! Its content is real data nobody wrote for the tests: the crates of a
//! `Cargo.lock` (this repository's own) as cargo keeps them on this
//! machine, the `.crate` files under `$CARGO_HOME/registry/cache/
//! index.crates.io-*/` and the index lines crates.io served, from cargo's
//! sparse-index cache under `$CARGO_HOME/registry/index/
//! index.crates.io-*/.cache/` ([`read_index_cache`]). `cargo fetch
//! --locked` fills both.
//!
//! Routes:
//! - `/index/config.json`: `{"dl": ..., "api": ...}`, both on the canary's
//!   second origin ([`CargoCanary::dl_origin`]), as crates.io names
//!   `static.crates.io`;
//! - `/index/<index path>`: every cached line of the crate, byte for byte;
//! - on the second origin, `/crates/{crate}/{crate}-{version}.crate`: the
//!   cached `.crate`.
//!
//! Every request on either origin goes into one log. Every method but GET
//! and HEAD is logged and answered 405: the canary accepts no writes.

use crate::request_log::{lock, RequestLog};
use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use egress_lock::CargoLock;
use egress_model::{CrateName, UpstreamRequest};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One crate as the canary serves it.
#[derive(Debug, Clone, Default)]
pub struct CanaryCrate {
    /// Index lines, in the order crates.io gave them.
    pub lines: Vec<Vec<u8>>,
    /// `.crate` bytes by version.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// What the canary serves, by lowercased crate name.
pub type CanaryContent = BTreeMap<String, CanaryCrate>;

/// The directories cargo keeps crates.io's data in: `$CARGO_HOME` (else
/// `~/.cargo`), `registry/cache/index.crates.io-*` and
/// `registry/index/index.crates.io-*`.
pub fn cargo_home_registry() -> io::Result<(PathBuf, PathBuf)> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or_else(|| io::Error::other("neither CARGO_HOME nor HOME is set"))?;
    let find = |dir: &str| -> io::Result<PathBuf> {
        let base = home.join("registry").join(dir);
        std::fs::read_dir(&base)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("index.crates.io-"))
            })
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!(
                        "no index.crates.io-* under {}: run `cargo fetch --locked`",
                        base.display()
                    ),
                )
            })
    };
    Ok((find("cache")?, find("index")?))
}

/// Reads one file of cargo's index cache: a version byte, the index
/// format as a little-endian u32, the index's own version string, then
/// pairs of a semver version and a JSON line, each ending in a NUL.
pub fn read_index_cache(bytes: &[u8]) -> io::Result<Vec<(String, Vec<u8>)>> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_string());
    let rest = bytes
        .get(5..)
        .ok_or_else(|| bad("shorter than its header"))?;
    let mut parts = rest.split(|&b| b == 0);
    parts.next().ok_or_else(|| bad("no index version"))?;
    let mut out = Vec::new();
    while let Some(version) = parts.next() {
        if version.is_empty() {
            break;
        }
        let line = parts
            .next()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad("a version without its line"))?;
        let version = String::from_utf8(version.to_vec()).map_err(|_| bad("version not UTF-8"))?;
        out.push((version, line.to_vec()));
    }
    Ok(out)
}

/// The content for every crates.io package of `lock`, read from cargo's
/// caches: all the index lines cached for each, and the `.crate` of each
/// locked version. A locked crate missing from the caches is an error
/// naming it.
pub fn content_from_cargo_home(lock: &CargoLock) -> io::Result<CanaryContent> {
    let (cache, index) = cargo_home_registry()?;
    let mut content = CanaryContent::new();
    for pin in &lock.pins {
        let key = pin.name.as_str().to_ascii_lowercase();
        let entry = match content.entry(key) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(slot) => {
                let path = index.join(".cache").join(pin.name.index_path());
                let bytes = std::fs::read(&path).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("{}: {e}; run `cargo fetch --locked`", path.display()),
                    )
                })?;
                let lines = read_index_cache(&bytes)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                slot.insert(CanaryCrate {
                    lines: lines.into_iter().map(|(_, l)| l).collect(),
                    files: BTreeMap::new(),
                })
            }
        };
        let file = cache.join(format!("{}-{}.crate", pin.name, pin.version));
        let bytes = std::fs::read(&file).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: {e}; run `cargo fetch --locked`", file.display()),
            )
        })?;
        entry.files.insert(pin.version.clone(), bytes);
    }
    Ok(content)
}

struct State {
    content: Mutex<CanaryContent>,
    log: RequestLog,
    dl_origin: String,
}

/// The cargo canary upstream; see the module docs. Stops on drop.
pub struct CargoCanary {
    _server: ServerHandle,
    _dl: ServerHandle,
    state: Arc<State>,
    origin: String,
}

impl CargoCanary {
    /// Binds two free loopback ports (the index and its download origin).
    pub fn start(content: CanaryContent) -> io::Result<CargoCanary> {
        let dl_holder: Arc<Mutex<Option<Arc<State>>>> = Arc::new(Mutex::new(None));
        let for_dl = Arc::clone(&dl_holder);
        let dl = Server::bind(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            move |req: Request| match lock(&for_dl).as_ref() {
                Some(state) => state.handle_dl(&req),
                None => Response::new(503).into(),
            },
            Limits::default(),
        )?;
        let state = Arc::new(State {
            content: Mutex::new(content),
            log: RequestLog::default(),
            dl_origin: dl.base_url(),
        });
        *lock(&dl_holder) = Some(Arc::clone(&state));
        let for_index = Arc::clone(&state);
        let server = Server::bind(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            move |req: Request| for_index.handle(&req),
            Limits::default(),
        )?;
        let origin = server.base_url();
        Ok(CargoCanary {
            _server: server,
            _dl: dl,
            state,
            origin,
        })
    }

    /// The sparse index URL, `http://127.0.0.1:PORT/index/`, as
    /// `--cargo-index-url` and `sparse+` take it.
    pub fn index_url(&self) -> String {
        format!("{}/index/", self.origin)
    }

    /// The download origin `config.json` names.
    pub fn dl_origin(&self) -> &str {
        &self.state.dl_origin
    }

    /// Every request so far, on either origin.
    pub fn requests(&self) -> Vec<UpstreamRequest> {
        self.state.log.since(0)
    }

    /// Drops a crate's version from what the canary serves (its line and
    /// its file), as if it had never been published.
    pub fn forget(&self, name: &CrateName, version: &str) {
        let mut content = lock(&self.state.content);
        if let Some(c) = content.get_mut(&name.as_str().to_ascii_lowercase()) {
            c.files.remove(version);
            let needle = format!("\"vers\":\"{version}\"");
            let spaced = format!("\"vers\": \"{version}\"");
            c.lines.retain(|l| {
                let s = String::from_utf8_lossy(l);
                !s.contains(&needle) && !s.contains(&spaced)
            });
        }
    }
}

fn not_found() -> Reply {
    Response::new(404)
        .with_header("Content-Type", "application/json")
        .with_body("{\"errors\":[{\"detail\":\"Not Found\"}]}")
        .into()
}

fn no_writes() -> Reply {
    Response::new(405)
        .with_header("Allow", "GET, HEAD")
        .with_header("Content-Type", "application/json")
        .with_body("{\"errors\":[{\"detail\":\"the canary upstream accepts no writes\"}]}")
        .into()
}

impl State {
    fn handle(&self, req: &Request) -> Reply {
        self.log.record(req);
        if !req.method.is_read() {
            return no_writes();
        }
        let path = req.path();
        if path == "/index/config.json" {
            let config = serde_json::json!({
                "dl": format!("{}/crates/{{crate}}/{{crate}}-{{version}}.crate", self.dl_origin),
                "api": self.dl_origin,
            });
            return Response::new(200)
                .with_header("Content-Type", "application/json")
                .with_body(config.to_string())
                .into();
        }
        let Some(rest) = path.strip_prefix("/index/") else {
            return not_found();
        };
        let Some(name) = rest.rsplit('/').next().and_then(|n| CrateName::new(n).ok()) else {
            return not_found();
        };
        if name.index_path() != rest {
            return not_found();
        }
        let content = lock(&self.content);
        match content.get(rest.rsplit('/').next().unwrap_or_default()) {
            Some(c) if !c.lines.is_empty() => {
                let mut body = Vec::new();
                for l in &c.lines {
                    body.extend_from_slice(l);
                    body.push(b'\n');
                }
                Response::new(200)
                    .with_header("Content-Type", "text/plain")
                    .with_body(body)
                    .into()
            }
            _ => not_found(),
        }
    }

    fn handle_dl(&self, req: &Request) -> Reply {
        self.log.record(req);
        if !req.method.is_read() {
            return no_writes();
        }
        let found = req
            .path()
            .strip_prefix("/crates/")
            .and_then(|r| r.split_once('/'))
            .and_then(|(name, file)| {
                let version = file
                    .strip_prefix(&format!("{name}-"))?
                    .strip_suffix(".crate")?;
                let content = lock(&self.content);
                content
                    .get(&name.to_ascii_lowercase())?
                    .files
                    .get(version)
                    .cloned()
            });
        match found {
            Some(bytes) => Response::new(200)
                .with_header("Content-Type", "application/gzip")
                .with_body(bytes)
                .into(),
            None => not_found(),
        }
    }
}

/// Reads `path` as a `Cargo.lock`, for the canary's content.
pub fn read_lock(path: &Path) -> io::Result<CargoLock> {
    let text = std::fs::read_to_string(path)?;
    egress_lock::parse_cargo_lock(&text, &path.display().to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cargos_index_cache() {
        let mut bytes = vec![3, 2, 0, 0, 0];
        bytes.extend_from_slice(b"etag: \"x\"\0");
        bytes.extend_from_slice(b"1.0.0\0{\"vers\":\"1.0.0\"}\0");
        bytes.extend_from_slice(b"1.0.1\0{\"vers\":\"1.0.1\"}\0");
        let lines = read_index_cache(&bytes).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].0, "1.0.1");
        assert_eq!(lines[1].1, b"{\"vers\":\"1.0.1\"}");
        assert!(read_index_cache(&[3, 2]).is_err());
        assert!(read_index_cache(b"\x03\x02\0\0\0v\x001.0.0\0").is_err());
    }
}
