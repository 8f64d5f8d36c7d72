//! A peer's set-up as data: one `testbed/peers/<name>.conf` file of
//! `key = value` lines (see testbed/README.md for the keys).

use std::path::{Path, PathBuf};

/// The registry protocol a peer speaks, and so which canary it is started
/// in front of and which suite runs against it: the suite's own.
pub use egress_suite::Protocol;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerConfig {
    /// The variant's name: the file's stem (`devpi-offline`).
    pub name: String,
    pub about: String,
    pub protocol: Protocol,
    /// The directory under the peers directory that the commands run from:
    /// a venv (PyPI peers), or an npm install with its `node_modules`.
    pub venv: String,
    /// A directory to fill with the lab's packages before anything runs.
    pub seed: Option<String>,
    /// Files written before anything runs (a peer's own config file).
    pub files: Vec<FileSpec>,
    /// The directory the config file is in.
    pub dir: PathBuf,
    pub init: Vec<Vec<String>>,
    pub env: Vec<(String, String)>,
    pub run: Vec<String>,
    pub setup: Option<Setup>,
    pub warm_then_run: Option<Vec<String>>,
    /// The index path on the peer, e.g. `/root/canary/+simple/`; for an npm
    /// peer, the registry's path (`/`); for an apt peer, the archive root a
    /// `sources.list` line names (`/debian/`).
    pub index: String,
    /// apt: the keyring file the peer's `Release` must verify against
    /// (placeholders allowed, read once the peer serves); the canary's
    /// keyring when not given.
    pub keyring: Option<String>,
    /// The path that must answer 200 before the peer counts as serving
    /// (Verdaccio's `/-/ping`); the index when not given.
    pub ready: Option<String>,
    /// The highest `{port}` the peer can listen on (apt-cacher-ng 3.7.4
    /// cannot bind a port above 32767); any free loopback port when not given.
    pub max_port: Option<u16>,
}

/// One `file = TEMPLATE DESTINATION [NAME=VALUE]...` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// Relative to [`PeerConfig::dir`].
    pub template: String,
    pub to: String,
    /// Placeholders of this template alone: `{NAME}` in its text becomes
    /// VALUE, itself filled first. A template shared with something else
    /// (bandersnatch's, which a fixture test fills too) keeps its own names.
    pub placeholders: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setup {
    /// Log in as root and create the mirror index `user/index` of the canary.
    DevpiMirror { user: String, index: String },
}

/// The lowest port a peer with a `max-port` is given.
pub const LOW_PORT: u16 = 20_000;

/// The values the placeholders take for one start of a peer.
pub struct Vars<'a> {
    pub port: u16,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub canary_url: &'a str,
    pub canary_index: &'a str,
    pub workdir: &'a Path,
    pub venv: &'a Path,
    /// The protocol's own placeholders, `(NAME, VALUE)` for `{NAME}`: an apt
    /// peer's `{dist}`, `{component}`, `{arch}` and `{canary_keyring}`.
    pub extra: &'a [(String, String)],
}

/// The host and port of `http://HOST:PORT`, for `{canary_host}` and
/// `{canary_port}`; empty when `url` is not of that shape.
pub fn host_port(url: &str) -> (String, String) {
    let authority = url
        .split_once("://")
        .map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
    match authority.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            (h.to_string(), p.to_string())
        }
        _ => (authority.to_string(), String::new()),
    }
}

impl Vars<'_> {
    /// Substitutes every placeholder in one word.
    pub fn fill(&self, word: &str) -> String {
        let (host, port) = host_port(self.canary_url);
        let word = self.extra.iter().fold(word.to_string(), |w, (k, v)| {
            w.replace(&format!("{{{k}}}"), v)
        });
        word.replace("{port}", &self.port.to_string())
            .replace("{canary_index}", self.canary_index)
            .replace("{canary_url}", self.canary_url)
            .replace("{canary_host}", &host)
            .replace("{canary_port}", &port)
            .replace("{workdir}", &self.workdir.to_string_lossy())
            .replace("{venv}", &self.venv.to_string_lossy())
    }

    pub fn command(&self, words: &[String]) -> Vec<String> {
        words.iter().map(|w| self.fill(w)).collect()
    }

    /// A template's text: its own placeholders, then the common ones.
    pub fn fill_template(&self, text: &str, own: &[(String, String)]) -> String {
        let text = own.iter().fold(text.to_string(), |t, (k, v)| {
            t.replace(&format!("{{{k}}}"), &self.fill(v))
        });
        self.fill(&text)
    }
}

fn words(v: &str) -> Vec<String> {
    v.split_whitespace().map(str::to_string).collect()
}

/// Why a peer config could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A line of `<name>.conf` is wrong.
    #[error("{name}.conf line {line}: {what}")]
    Line {
        name: String,
        line: usize,
        what: String,
    },
    /// A key the file must have is missing.
    #[error("{name}.conf: `{key}` is missing (index: a path that starts and ends with /)")]
    Missing { name: String, key: &'static str },
    #[error("{name}.conf: `setup = devpi-mirror` is for PyPI peers")]
    SetupForNpm { name: String },
    #[error("{name}.conf: `keyring` is for apt peers (protocol = apt)")]
    KeyringForApt { name: String },
    #[error("{name}.conf: `warm-then-run` is for PyPI, npm and apt peers: a cargo or Hub peer syncs in an `init` step")]
    WarmForCargo { name: String },
    #[error("{}: {cause}", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl PeerConfig {
    /// Parses one file's text; `name` is the variant's name.
    pub fn parse(name: &str, text: &str) -> Result<Self, ConfigError> {
        let mut c = PeerConfig {
            name: name.to_string(),
            about: String::new(),
            protocol: Protocol::Pypi,
            venv: String::new(),
            seed: None,
            files: Vec::new(),
            dir: PathBuf::new(),
            init: Vec::new(),
            env: Vec::new(),
            run: Vec::new(),
            setup: None,
            warm_then_run: None,
            index: String::new(),
            keyring: None,
            ready: None,
            max_port: None,
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |m: &str| ConfigError::Line {
                name: name.to_string(),
                line: n + 1,
                what: m.to_string(),
            };
            let (key, value) = line
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| at("expected key = value"))?;
            match key {
                "about" => c.about = value.to_string(),
                "protocol" => {
                    c.protocol = value.parse().map_err(|_| {
                        let names: Vec<String> =
                            Protocol::ALL.iter().map(|p| format!("`{p}`")).collect();
                        at(&format!("protocol is one of {}", names.join(", ")))
                    })?
                }
                "ready" if value.starts_with('/') => c.ready = Some(value.to_string()),
                "ready" => return Err(at("ready wants a path that starts with /")),
                "venv" => c.venv = value.to_string(),
                "seed" => c.seed = Some(value.to_string()),
                "init" => c.init.push(words(value)),
                "file" => {
                    let w = words(value);
                    let [template, to, own @ ..] = w.as_slice() else {
                        return Err(at("file wants TEMPLATE DESTINATION [NAME=VALUE]..."));
                    };
                    let placeholders = own
                        .iter()
                        .map(|kv| {
                            kv.split_once('=')
                                .filter(|(k, _)| !k.is_empty())
                                .map(|(k, v)| (k.to_string(), v.to_string()))
                                .ok_or_else(|| at(&format!("file: `{kv}` is not NAME=VALUE")))
                        })
                        .collect::<Result<_, _>>()?;
                    c.files.push(FileSpec {
                        template: template.clone(),
                        to: to.clone(),
                        placeholders,
                    });
                }
                "env" => {
                    let (k, v) = value
                        .split_once('=')
                        .ok_or_else(|| at("env wants KEY=VALUE"))?;
                    c.env.push((k.to_string(), v.to_string()));
                }
                "run" => c.run = words(value),
                "warm-then-run" => c.warm_then_run = Some(words(value)),
                "index" => c.index = value.to_string(),
                "keyring" => c.keyring = Some(value.to_string()),
                "max-port" => {
                    c.max_port = Some(
                        value
                            .parse::<u16>()
                            .ok()
                            .filter(|p| *p > LOW_PORT)
                            .ok_or_else(|| {
                                at(&format!("max-port wants a port above {}", LOW_PORT))
                            })?,
                    )
                }
                "setup" => {
                    let w = words(value);
                    let Some(("devpi-mirror", Some((user, index)))) = w
                        .first()
                        .map(|s| (s.as_str(), w.get(1).and_then(|t| t.split_once('/'))))
                    else {
                        return Err(at("setup: the only step is `devpi-mirror USER/INDEX`"));
                    };
                    c.setup = Some(Setup::DevpiMirror {
                        user: user.to_string(),
                        index: index.to_string(),
                    });
                }
                other => return Err(at(&format!("unknown key `{other}`"))),
            }
        }
        for (key, empty) in [
            ("venv", c.venv.is_empty()),
            ("run", c.run.is_empty()),
            (
                "index",
                !c.index.starts_with('/') || !c.index.ends_with('/'),
            ),
        ] {
            if empty {
                return Err(ConfigError::Missing {
                    name: name.to_string(),
                    key,
                });
            }
        }
        if c.protocol != Protocol::Pypi && c.setup.is_some() {
            return Err(ConfigError::SetupForNpm {
                name: name.to_string(),
            });
        }
        if matches!(c.protocol, Protocol::Cargo | Protocol::Hf) && c.warm_then_run.is_some() {
            return Err(ConfigError::WarmForCargo {
                name: name.to_string(),
            });
        }
        if c.protocol != Protocol::Apt && c.keyring.is_some() {
            return Err(ConfigError::KeyringForApt {
                name: name.to_string(),
            });
        }
        Ok(c)
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&name, &text).map(|c| PeerConfig { dir, ..c })
    }

    /// Every `*.conf` in `dir`, sorted by name, so columns come in a fixed order.
    pub fn load_dir(dir: &Path) -> Result<Vec<Self>, ConfigError> {
        let entries = std::fs::read_dir(dir).map_err(|cause| ConfigError::Read {
            path: dir.to_path_buf(),
            cause,
        })?;
        let paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "conf"))
            .collect();
        let mut all = paths
            .iter()
            .map(|p| Self::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_key_and_fills_placeholders() {
        let c = PeerConfig::parse(
            "x",
            "# comment\nabout = a b\nvenv = v\nseed = {workdir}/p\ninit = {venv}/bin/i --x\n\
             env = K={canary_index}\nfile = a.in {workdir}/a\nfile = b.in {workdir}/b dir={workdir}/m\nrun = {venv}/bin/r --port {port}\nsetup = devpi-mirror root/canary\n\
             warm-then-run = r --offline\nindex = /root/canary/+simple/\n",
        )
        .expect("parses");
        assert_eq!(c.about, "a b");
        assert_eq!((c.protocol, c.ready.as_deref()), (Protocol::Pypi, None));
        assert_eq!(
            c.files,
            vec![
                FileSpec {
                    template: "a.in".into(),
                    to: "{workdir}/a".into(),
                    placeholders: vec![],
                },
                FileSpec {
                    template: "b.in".into(),
                    to: "{workdir}/b".into(),
                    placeholders: vec![("dir".into(), "{workdir}/m".into())],
                },
            ]
        );
        assert_eq!(c.env, vec![("K".into(), "{canary_index}".into())]);
        assert_eq!(
            c.setup,
            Some(Setup::DevpiMirror {
                user: "root".into(),
                index: "canary".into()
            })
        );
        let vars = Vars {
            port: 7,
            canary_url: "http://127.0.0.1:1",
            canary_index: "http://127.0.0.1:1/simple/",
            workdir: Path::new("/w d"),
            venv: Path::new("/v"),
            extra: &[],
        };
        assert_eq!(vars.command(&c.run), ["/v/bin/r", "--port", "7"]);
        assert_eq!(vars.fill("{workdir}/p"), "/w d/p");
        assert_eq!(
            vars.fill_template("{dir} <- {canary_url} {other}", &c.files[1].placeholders),
            "/w d/m <- http://127.0.0.1:1 {other}"
        );
    }

    #[test]
    fn an_npm_peer() {
        let c = PeerConfig::parse(
            "x",
            "protocol = npm\nvenv = verdaccio\nrun = {venv}/node_modules/.bin/verdaccio\nready = /-/ping\nindex = /\n",
        )
        .expect("parses");
        assert_eq!(c.protocol, Protocol::Npm);
        assert_eq!(c.ready.as_deref(), Some("/-/ping"));
        assert_eq!(c.index, "/");
    }

    #[test]
    fn an_apt_peer_and_its_placeholders() {
        let c = PeerConfig::parse(
            "x",
            "protocol = apt\nvenv = acng\nrun = {venv}/root/usr/sbin/acng -c {workdir}/conf port={port}\n\
             keyring = {workdir}/own.gpg\nindex = /debian/\n",
        )
        .expect("parses");
        assert_eq!(c.protocol, Protocol::Apt);
        assert_eq!(c.keyring.as_deref(), Some("{workdir}/own.gpg"));
        assert_eq!(c.index, "/debian/");
        assert_eq!(c.max_port, None);
        let extra = [
            ("dist".to_string(), "canary".to_string()),
            (
                "canary_keyring".to_string(),
                "/w/canary-keyring.gpg".to_string(),
            ),
        ];
        let vars = Vars {
            port: 7,
            canary_url: "http://127.0.0.1:4242",
            canary_index: "http://127.0.0.1:4242/debian/",
            workdir: Path::new("/w"),
            venv: Path::new("/v"),
            extra: &extra,
        };
        assert_eq!(
            vars.fill(
                "{canary_host}:{canary_port} {canary_index}dists/{dist}/ {canary_keyring} {port}"
            ),
            "127.0.0.1:4242 http://127.0.0.1:4242/debian/dists/canary/ /w/canary-keyring.gpg 7"
        );
        assert_eq!(
            host_port("http://[::1]:80/x"),
            ("[::1]".into(), "80".into())
        );
        assert_eq!(host_port("nonsense"), (String::new(), String::new()));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        for (text, want) in [
            ("venv = v\nrun = r\n", "`index` is missing"),
            (
                "venv = v\nrun = r\nindex = /s/\nfrobnicate = 1\n",
                "line 4: unknown key",
            ),
            (
                "venv = v\nrun = r\nindex = /s/\nsetup = other\n",
                "only step",
            ),
            ("venv v\n", "line 1: expected key = value"),
            (
                "protocol = pip\nvenv = v\nrun = r\nindex = /\n",
                "line 1: protocol is one of `pypi`, `npm`, `apt`, `cargo`, `hf`",
            ),
            (
                "venv = v\nrun = r\nindex = /\nready = -/ping\n",
                "line 4: ready wants a path",
            ),
            (
                "protocol = npm\nvenv = v\nrun = r\nindex = /\nsetup = devpi-mirror root/x\n",
                "is for PyPI peers",
            ),
            (
                "protocol = apt\nvenv = v\nrun = r\nindex = /\nsetup = devpi-mirror root/x\n",
                "is for PyPI peers",
            ),
            (
                "venv = v\nrun = r\nindex = /s/\nmax-port = 80\n",
                "line 4: max-port wants a port above",
            ),
            (
                "protocol = cargo\nvenv = v\nrun = r\nindex = /index/\nwarm-then-run = r\n",
                "`warm-then-run` is for PyPI, npm and apt peers",
            ),
            (
                "protocol = hf\nvenv = v\nrun = r\nindex = /\nwarm-then-run = r\n",
                "a cargo or Hub peer syncs in an `init` step",
            ),
            (
                "venv = v\nrun = r\nindex = /s/\nkeyring = k.gpg\n",
                "`keyring` is for apt peers",
            ),
            (
                "venv = v\nrun = r\nindex = /s/\nfile = a {workdir}/a dir\n",
                "`dir` is not NAME=VALUE",
            ),
        ] {
            let e = PeerConfig::parse("x", text).expect_err(text);
            assert!(e.to_string().contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_repo_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed/peers");
        let all = PeerConfig::load_dir(&dir).expect("testbed/peers parses");
        assert!(all.len() >= 10, "{all:?}");
        assert!(all.iter().any(|c| c.protocol == Protocol::Npm), "{all:?}");
        // Every template a config names is there, relative to the config.
        for c in &all {
            assert_eq!(c.dir, dir, "{}", c.name);
            for f in &c.files {
                assert!(
                    c.dir.join(&f.template).is_file(),
                    "{}: {}",
                    c.name,
                    f.template
                );
            }
        }
    }
}
