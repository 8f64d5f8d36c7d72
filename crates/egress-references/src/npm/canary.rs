//! The npm canary upstream: a small npm-registry-protocol server the suite
//! controls, the npm counterpart of the PyPI canary.
//!
//! **Test fixture.** It binds to 127.0.0.1 only and never connects anywhere.
//!
//! Routes (the request-target is matched raw, never decoded beyond the one
//! scoped-name separator):
//! - packuments at `/<name>` and, for scoped names, `/@scope%2fname` (either
//!   case of `%2f`) and `/@scope/name`: the full document as
//!   `application/json`, or the abbreviated ("corgi") one when `Accept`
//!   names `application/vnd.npm.install-v1+json`, with `Vary: Accept`;
//! - one version's manifest at `/<name>/<version-or-dist-tag>`;
//! - tarballs at `/<name>/-/<name>-<version>.tgz`, and for scoped names
//!   `/@scope/name/-/name-<version>.tgz` (the encoded spelling too);
//! - the registry's signing keys at [`KEYS_PATH`] (`/-/npm/v1/keys`).
//!
//! Every version but those of [`NO_INTEGRITY`] and [`BAD_INTEGRITY`] carries
//! the `dist.integrity` (sha512 SRI) of its served bytes, and every one but
//! those of [`OFFSITE`] an absolute `dist.tarball` URL on the canary's own
//! origin. `dist.shasum` (sha1) is left out (npm checks `integrity` when it
//! is there), but for the universe's packages, which list both.
//!
//! Like registry.npmjs.org, the canary signs every version that lists an
//! integrity: `dist.signatures` (full and abbreviated packuments alike) is
//! `[{"keyid": "SHA256:...", "sig": "<base64 DER>"}]`, an ECDSA P-256 /
//! SHA-256 signature over `<name>@<version>:<listed integrity>` by a key made
//! at start, published at [`KEYS_PATH`] as `{"keys": [{"expires": null,
//! "keyid", "keytype": "ecdsa-sha2-nistp256", "scheme":
//! "ecdsa-sha2-nistp256", "key": "<base64 SPKI DER>"}]}`, what
//! `npm audit signatures` reads. [`NpmCanary::forge_signature`] replaces one
//! version's signature with a well-formed one over another message.
//!
//! A second listener, the canary's "CDN origin" ([`NpmCanary::offsite_origin`],
//! another loopback port), serves only the tarballs of [`OFFSITE`], at the
//! same paths; the main origin does not serve them. It logs every request
//! into the same log, so any contact with it shows.
//!
//! Every request, whatever its answer, goes into the same log as the PyPI
//! canary's, read through [`Upstream`]; requests below [`TRIPWIRE_PATH`] are
//! answered `200 tripped` and flagged. The canary is an upstream, never a
//! place to publish: every method but GET and HEAD (publish, unpublish,
//! dist-tag changes, adduser, login...) is logged and answered `405`, and
//! `/-/` routes other than [`KEYS_PATH`] `404`.
//!
//! Content, all real tarballs built by `egress-artifacts`, reproducible
//! except for the port baked into the tripwire's `postinstall` (and the
//! signatures, by a key made at start):
//!
//! | package | versions | role |
//! |---|---|---|
//! | `ec-present` | 1.0.0, 1.1.0 (`latest`) | in the snapshot |
//! | `@ec/scoped` | 1.0.0 | in the snapshot |
//! | `ec-upstream-only` | 1.0.0 | upstream only |
//! | `ec-tripwire` | 0.1.0, whose `postinstall` calls the tripwire | in the snapshot |
//! | `ec-template-text` | 1.0.0, every [`TEMPLATE_MARKERS`](egress_model::TEMPLATE_MARKERS) raw text in description and README | in the snapshot |
//! | `ec-no-integrity` | 1.0.0, no `dist.integrity` (nor `dist.shasum`) | upstream only |
//! | `ec-bad-integrity` | 1.0.0, a well-formed sha512 `dist.integrity` of other bytes | upstream only |
//! | `ec-offsite` | 1.0.0, its `dist.tarball` on the CDN origin | upstream only |
//!
//! Started with a [`Universe`] ([`NpmCanary::start_with`],
//! [`NpmCanary::serve_with`]): the universe's packages too (`eu-*`, `@eu/*`,
//! see [`super::universe`]), each version with the publish time its table
//! gives, `dist.shasum` beside `dist.integrity`, and its dependency and
//! platform fields in both packument forms. Without one (the default)
//! nothing of it is served and nothing else changes.
//!
//! Served with [`ServeOptions::kit`] (the standalone canary): the conformance
//! kit's packages too (`egress-kit-*`, `@egress-kit/scoped`, see
//! [`super::kit`]), built by the kit's code with the tripwire aimed at the
//! canary's origin, so the same tarballs as `egress-conformance kit --canary
//! ORIGIN`; the plan's present package is then the kit's, and the mutations
//! (a new version, a tarball rebuilt, a dist-tag moved) act on it.

use super::kit::{self, index_js, spec, template_spec, tripwire_spec};
use super::universe;
use crate::control::{self, Secret, ServeOptions};
use crate::request_log::{lock, RequestLog};
use crate::universe::Universe;
use egress_artifacts::{build_npm_tarball, NpmPackageSpec, NpmTarball};
use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use egress_model::upstream::TRIPWIRE_PATH;
use egress_model::{
    Accept, Observation, ProjectName, Sha256Digest, Upstream, UpstreamError, UpstreamPlan,
    UpstreamRequest,
};
use ring::digest;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};

/// In the snapshot; the canary serves it too.
pub const PRESENT: &str = "ec-present";
/// A scoped package in the snapshot.
pub const SCOPED: &str = "@ec/scoped";
/// Served by the canary; a snapshot must not hold it.
pub const UPSTREAM_ONLY: &str = "ec-upstream-only";
/// Its `postinstall` script calls the canary's tripwire.
pub const TRIPWIRE: &str = "ec-tripwire";
/// Its description and README carry every raw [`TEMPLATE_MARKERS`](egress_model::TEMPLATE_MARKERS) expression.
pub const TEMPLATE: &str = "ec-template-text";
/// Upstream only; its versions list no `dist.integrity` and no `dist.shasum`.
pub const NO_INTEGRITY: &str = "ec-no-integrity";
/// Upstream only; its `dist.integrity` is a well-formed sha512 SRI of other
/// bytes than the served tarball's.
pub const BAD_INTEGRITY: &str = "ec-bad-integrity";
/// Upstream only; its `dist.tarball` is on the canary's CDN origin
/// ([`NpmCanary::offsite_origin`]), which alone serves it.
pub const OFFSITE: &str = "ec-offsite";

/// The media type of abbreviated packuments.
pub const ABBREVIATED: &str = "application/vnd.npm.install-v1+json";
/// Where a registry publishes the keys its `dist.signatures` verify with.
pub const KEYS_PATH: &str = "/-/npm/v1/keys";
/// `keytype` and `scheme` of the canary's registry key, as npm names them.
pub const KEY_SCHEME: &str = "ecdsa-sha2-nistp256";

/// The DER prefix of a P-256 SubjectPublicKeyInfo (id-ecPublicKey,
/// prime256v1), followed by the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The canary's registry signing key, made at start.
struct RegistryKey {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
    /// `SHA256:<unpadded base64 of the sha256 of the SPKI DER>`.
    keyid: String,
    /// The SPKI DER, base64.
    key: String,
}

impl RegistryKey {
    fn generate() -> io::Result<Self> {
        let err = |what: &str| io::Error::other(format!("npm canary registry key: {what}"));
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|_| err("cannot generate"))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| err("cannot load"))?;
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(pair.public_key().as_ref());
        let fingerprint =
            egress_model::base64::encode(digest::digest(&digest::SHA256, &spki).as_ref());
        Ok(Self {
            keyid: format!("SHA256:{}", fingerprint.trim_end_matches('=')),
            key: egress_model::base64::encode(&spki),
            pair,
            rng,
        })
    }

    /// A base64 DER signature over `message`; `None` only if the system
    /// random source fails.
    fn sign(&self, message: &str) -> Option<String> {
        let sig = self.pair.sign(&self.rng, message.as_bytes()).ok()?;
        Some(egress_model::base64::encode(sig.as_ref()))
    }

    fn keys_document(&self) -> serde_json::Value {
        serde_json::json!({
            "keys": [{
                "expires": null,
                "keyid": self.keyid,
                "keytype": KEY_SCHEME,
                "scheme": KEY_SCHEME,
                "key": self.key,
            }]
        })
    }
}

/// Whether a snapshot built from the canary holds the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Snapshot,
    UpstreamOnly,
    /// The conformance kit's (standalone canary only): a lab's snapshot
    /// holds it when the lab added the kit; never part of
    /// [`NpmCanary::tarballs`].
    Kit,
    /// The universe's (only when started with one); never part of
    /// [`NpmCanary::tarballs`].
    Universe,
}

/// What a version's `dist` lists as the digest of its tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listed {
    /// The integrity of the served bytes.
    Served,
    /// Nothing: no `dist.integrity`, no `dist.shasum`.
    Nothing,
    /// This integrity, a well-formed sha512 SRI of other bytes.
    Other(String),
}

struct PackageVersion {
    spec: NpmPackageSpec,
    tarball: NpmTarball,
    /// Unix time of the publish (see [`event_time`]).
    published: u64,
    listed: Listed,
    /// `dist.signatures[0].sig`: the registry signature over
    /// `<name>@<version>:<listed integrity>`; none without an integrity.
    signature: Option<String>,
}

impl PackageVersion {
    /// Builds the tarball, lists its digest as [`listed_for`] says, and
    /// signs what is listed.
    fn build(spec: NpmPackageSpec, published: u64, key: &RegistryKey) -> Self {
        let tarball = build_npm_tarball(&spec);
        let mut v = Self {
            spec,
            tarball,
            published,
            listed: Listed::Served,
            signature: None,
        };
        v.listed = listed_for(&v.spec.name, &v);
        v.signature = v.listed_integrity().and_then(|integrity| {
            key.sign(&signed_message(&v.spec.name, &v.spec.version, integrity))
        });
        v
    }

    /// The `dist.integrity` the packuments list, if any.
    fn listed_integrity(&self) -> Option<&str> {
        match &self.listed {
            Listed::Served => Some(&self.tarball.integrity),
            Listed::Nothing => None,
            Listed::Other(integrity) => Some(integrity),
        }
    }
}

struct Package {
    name: String,
    role: Role,
    versions: Vec<PackageVersion>,
    dist_tags: BTreeMap<String, String>,
    /// Unix time of the latest change.
    modified: u64,
    /// Whether its tarballs are served by the CDN origin (and only there).
    offsite: bool,
    /// Whether its packuments list times (`time`, `modified`): all but the
    /// universe's `eu-no-time`.
    dated: bool,
    /// Whether its versions list `dist.shasum` too: the universe's.
    shasum: bool,
}

impl Package {
    fn version(&self, version: &str) -> Option<&PackageVersion> {
        self.versions.iter().find(|v| v.spec.version == version)
    }

    fn created(&self) -> u64 {
        self.versions.iter().map(|v| v.published).min().unwrap_or(0)
    }
}

/// The path of a tarball on the canary: `/<name>/-/<bare name>-<version>.tgz`,
/// the scope separator left as a plain `/`, as registry.npmjs.org writes it.
pub fn tarball_path(name: &str, version: &str) -> String {
    format!(
        "/{name}/-/{}",
        egress_artifacts::npm_tarball_filename(name, version)
    )
}

struct Content {
    packages: Vec<Package>,
    /// Counts changes; every publish, replacement or tag move takes the next.
    events: u64,
    published: u32,
    replaced: u32,
    /// Tarballs (by file name) sent only after a delay.
    slow: std::collections::HashMap<String, std::time::Duration>,
}

impl Content {
    fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }

    fn package_mut(&mut self, name: &str) -> Option<&mut Package> {
        self.packages.iter_mut().find(|p| p.name == name)
    }

    fn next_event(&mut self) -> u64 {
        self.events += 1;
        self.events
    }
}

/// The Unix time of event number `event`: 2025-01-01T00:00:00Z plus
/// `event` seconds (capped below a day), so the content is the same on
/// every run.
fn event_time(event: u64) -> u64 {
    const BASE_TIME: u64 = 1_735_689_600;
    BASE_TIME + event.min(86_399)
}

/// A Unix time as registry.npmjs.org writes it: `2025-01-01T00:00:00.000Z`.
fn iso_time(secs: u64) -> String {
    let t = egress_model::Timestamp::from_unix(i64::try_from(secs).unwrap_or(i64::MAX), 0);
    let text = t.to_rfc3339();
    format!("{}.000Z", text.trim_end_matches('Z'))
}

struct State {
    key: RegistryKey,
    /// `http://127.0.0.1:PORT`, set right after binding.
    origin: OnceLock<String>,
    /// The CDN origin, `http://127.0.0.1:PORT2`, set right after binding.
    cdn_origin: OnceLock<String>,
    content: Mutex<Content>,
    log: RequestLog,
    /// The control API's secret, when the canary runs standalone.
    secret: Option<Secret>,
    /// Whether it serves the conformance kit (see [`ServeOptions::kit`]).
    kit: bool,
}

/// The npm canary upstream; see the module docs. Stops on
/// [`NpmCanary::stop`] or drop.
pub struct NpmCanary {
    server: ServerHandle,
    /// The CDN origin's listener, which serves only [`OFFSITE`]'s tarballs.
    cdn: ServerHandle,
    state: Arc<State>,
    origin: String,
}

impl NpmCanary {
    /// Binds 127.0.0.1 on two free ports (the registry and its CDN origin),
    /// then builds the content (the tripwire's `postinstall` needs the port).
    pub fn start() -> io::Result<NpmCanary> {
        Self::serve(&ServeOptions::default())
    }

    /// [`NpmCanary::start`], serving `universe` too (see
    /// [`super::universe`]).
    pub fn start_with(universe: Universe) -> io::Result<NpmCanary> {
        Self::serve_with(&ServeOptions::default(), Some(universe))
    }

    /// Binds where `options` say (the CDN origin on the same address, on
    /// a free port), with a control API when they give a secret (the
    /// standalone canary).
    pub fn serve(options: &ServeOptions) -> io::Result<NpmCanary> {
        Self::serve_with(options, None)
    }

    /// [`NpmCanary::serve`], serving `universe` too when given.
    pub fn serve_with(options: &ServeOptions, universe: Option<Universe>) -> io::Result<NpmCanary> {
        let state = Arc::new(State {
            key: RegistryKey::generate()?,
            origin: OnceLock::new(),
            cdn_origin: OnceLock::new(),
            content: Mutex::new(Content {
                packages: Vec::new(),
                events: 0,
                published: 0,
                replaced: 0,
                slow: Default::default(),
            }),
            log: RequestLog::default(),
            secret: options.secret.clone(),
            kit: options.kit,
        });
        let handler_state = Arc::clone(&state);
        let server = Server::bind(
            options.listen,
            move |req: Request| handler_state.handle(&req),
            Limits::default(),
        )?;
        let cdn_state = Arc::clone(&state);
        let cdn = Server::bind(
            (options.listen.ip(), 0),
            move |req: Request| cdn_state.handle_cdn(&req),
            Limits::default(),
        )?;
        let origin = options.origin(&server);
        let _ = state.origin.set(origin.clone());
        let _ = state.cdn_origin.set(control::sibling_origin(&origin, &cdn));
        {
            let mut content = lock(&state.content);
            let mut packages = initial_packages(&origin, &mut content, &state.key);
            if options.kit {
                packages.extend(kit_packages(&origin, &mut content, &state.key));
            }
            if let Some(universe) = universe {
                packages.extend(universe_packages(universe, &state.key));
            }
            content.packages = packages;
        }
        Ok(NpmCanary {
            server,
            cdn,
            state,
            origin,
        })
    }

    /// The CDN origin, `http://127.0.0.1:PORT2`: another listener, on
    /// another port, that serves only [`OFFSITE`]'s tarballs and logs into
    /// the same request log.
    pub fn offsite_origin(&self) -> String {
        self.state.cdn_origin().to_string()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.origin.clone()
    }

    /// `http://127.0.0.1:PORT/`, what npm takes as `--registry`.
    pub fn registry_url(&self) -> String {
        format!("{}/", self.origin)
    }

    pub fn stop(self) {
        self.server.stop();
        self.cdn.stop();
    }

    /// The whole request log.
    pub fn requests(&self) -> Vec<UpstreamRequest> {
        self.requests_since(0)
    }

    /// `(name, version, tarball)` of every version currently served of the
    /// packages a snapshot should hold (and, if asked, of the upstream-only
    /// package), so that a snapshot can be built from the very bytes served.
    pub fn tarballs(&self, include_upstream_only: bool) -> Vec<(String, String, NpmTarball)> {
        let content = lock(&self.state.content);
        content
            .packages
            .iter()
            .filter(|p| {
                p.role == Role::Snapshot || (include_upstream_only && p.role == Role::UpstreamOnly)
            })
            .flat_map(|p| {
                p.versions
                    .iter()
                    .map(|v| (p.name.clone(), v.spec.version.clone(), v.tarball.clone()))
            })
            .collect()
    }

    /// When `name@version` was published, as its packument's `time` says
    /// (`2025-01-01T00:00:07.000Z`), if the canary serves that version.
    pub fn published(&self, name: &str, version: &str) -> Option<String> {
        let content = lock(&self.state.content);
        let p = content.package(name)?;
        p.version(version).map(|v| iso_time(v.published))
    }

    /// The absolute URL of a served tarball (on the CDN origin for
    /// [`OFFSITE`]), if the canary serves that version.
    pub fn tarball_url(&self, name: &str, version: &str) -> Option<String> {
        let content = lock(&self.state.content);
        let p = content.package(name)?;
        p.version(version)
            .map(|_| tarball_url(self.state.package_origin(p), name, version))
    }

    /// `SHA256:<base64>`, the id of the key that signs every version.
    pub fn keyid(&self) -> String {
        self.state.key.keyid.clone()
    }

    /// The document served at [`KEYS_PATH`].
    pub fn keys_document(&self) -> serde_json::Value {
        self.state.key.keys_document()
    }

    /// `dist.signatures` of `name@version` as the packuments list it, if
    /// the version is served and signed.
    pub fn signatures(&self, name: &str, version: &str) -> Option<serde_json::Value> {
        let content = lock(&self.state.content);
        let sig = content.package(name)?.version(version)?.signature.clone()?;
        Some(serde_json::json!([{ "keyid": self.state.key.keyid, "sig": sig }]))
    }

    /// Replaces the registry signature of `name@version` with a well-formed
    /// signature, by the same key, over another message (as if the listed
    /// integrity had been changed after signing): `npm audit signatures`
    /// must call it invalid. Nothing else changes.
    pub fn forge_signature(&self, name: &str, version: &str) -> Result<(), String> {
        let mut content = lock(&self.state.content);
        let v = content
            .package_mut(name)
            .and_then(|p| p.versions.iter_mut().find(|v| v.spec.version == version))
            .ok_or_else(|| format!("the npm canary serves no {name} {version}"))?;
        let other = egress_artifacts::sri_sha512(b"bytes that were never published\n");
        v.signature = Some(
            self.state
                .key
                .sign(&signed_message(name, version, &other))
                .ok_or("the system random source failed")?,
        );
        Ok(())
    }

    /// From now on, the tarball named `filename` (`<name>-<version>.tgz`)
    /// is sent only after `delay`.
    pub fn set_slow(&self, filename: &str, delay: std::time::Duration) {
        lock(&self.state.content)
            .slow
            .insert(filename.to_string(), delay);
    }

    /// The version `tag` of `name` points at now.
    pub fn dist_tag(&self, name: &str, tag: &str) -> Option<String> {
        lock(&self.state.content)
            .package(name)?
            .dist_tags
            .get(tag)
            .cloned()
    }
}

impl NpmCanary {
    /// Publishes a new version (`9.9.9`, then `9.9.10`...) of the package
    /// `name` (scoped names too) and moves `latest` to it.
    pub fn publish(&self, name: &str) -> Result<Observation, UpstreamError> {
        self.state.publish(name)
    }

    /// Points dist-tag `tag` of `name` at `version`, which must be served.
    pub fn move_dist_tag(
        &self,
        name: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        self.state.move_dist_tag(name, tag, version)
    }
}

impl Upstream for NpmCanary {
    fn plan(&self) -> UpstreamPlan {
        self.state.plan()
    }

    fn mark(&self) -> u64 {
        self.state.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.state.requests_since(mark)
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError> {
        self.state.publish_new_version(project)
    }

    fn move_tag(
        &self,
        project: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        self.state.move_tag(project, tag, version)
    }

    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError> {
        self.state.replace_file_bytes(filename)
    }
}

impl State {
    /// Publishes a new version (`9.9.9`, then `9.9.10`...) of the package
    /// `name` (scoped names too) and moves `latest` to it.
    fn publish(&self, name: &str) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let version = format!("9.9.{}", 9 + content.published);
        let event = event_time(content.next_event());
        let Some(package) = content.package_mut(name) else {
            return Err(UpstreamError::NotServed {
                message: self.not_served(format!("the npm canary serves no package {name}")),
            });
        };
        let spec = NpmPackageSpec::new(
            name,
            &version,
            "Published at the canary during the run",
            &index_js(&version),
        );
        let new = PackageVersion::build(spec, event, &self.key);
        let observation = Observation::UpstreamMutation {
            description: format!("published {name} {version} at the npm canary (now latest)"),
            filename: new.tarball.filename.clone(),
            before: None,
            after: Sha256Digest::of(&new.tarball.bytes),
        };
        package.versions.push(new);
        package.dist_tags.insert("latest".into(), version);
        package.modified = package.modified.max(event);
        content.published += 1;
        Ok(observation)
    }

    /// Points dist-tag `tag` of `name` at `version`, which must be served;
    /// the observation names that version's tarball, with the digest of the
    /// tarball the tag pointed at before (if any).
    fn move_dist_tag(
        &self,
        name: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let event = event_time(content.next_event());
        let Some(package) = content.package_mut(name) else {
            return Err(UpstreamError::NotServed {
                message: self.not_served(format!("the npm canary serves no package {name}")),
            });
        };
        let sha256 =
            |p: &Package, v: &str| p.version(v).map(|v| Sha256Digest::of(&v.tarball.bytes));
        let Some(after) = sha256(package, version) else {
            return Err(UpstreamError::NotServed {
                message: self.not_served(format!("the npm canary serves no {name} {version}")),
            });
        };
        let previous = package.dist_tags.get(tag).cloned();
        let before = previous.as_deref().and_then(|v| sha256(package, v));
        let filename = egress_artifacts::npm_tarball_filename(name, version);
        package
            .dist_tags
            .insert(tag.to_string(), version.to_string());
        package.modified = package.modified.max(event);
        Ok(Observation::UpstreamMutation {
            description: format!(
                "moved dist-tag {tag} of {name} from {} to {version} at the npm canary",
                previous.as_deref().unwrap_or("nothing")
            ),
            filename,
            before,
            after,
        })
    }
}

impl Upstream for State {
    fn plan(&self) -> UpstreamPlan {
        let name = |s: &str| ProjectName::new(s).expect("fixture names are valid");
        let upstream_only_paths = lock(&self.content)
            .package(UPSTREAM_ONLY)
            .map(|p| {
                p.versions
                    .iter()
                    .map(|v| tarball_path(&p.name, &v.spec.version))
                    .collect()
            })
            .unwrap_or_default();
        UpstreamPlan {
            origin: self.origin().to_string(),
            index_url: format!("{}/", self.origin()),
            // The package a lab's snapshot holds: the kit's when served.
            present: name(if self.kit { kit::PRESENT } else { PRESENT }),
            upstream_only: name(UPSTREAM_ONLY),
            upstream_only_paths,
            tripwire: name(TRIPWIRE),
            template: name(TEMPLATE),
            no_digest: Some(name(NO_INTEGRITY)),
            bad_digest: Some(name(BAD_INTEGRITY)),
            offsite: Some(name(OFFSITE)),
            yanked: None,
            hf: None,
        }
    }

    fn mark(&self) -> u64 {
        self.log.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.log.since(mark)
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError> {
        self.publish(project.as_str())
    }

    fn move_tag(
        &self,
        project: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        self.move_dist_tag(project, tag, version)
    }

    /// Rebuilds the tarball named `filename` (the bare `<name>-<version>.tgz`)
    /// with one more file: same name and URL, new bytes and integrity.
    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError> {
        let mut content = lock(&self.content);
        let n = content.replaced;
        let event = event_time(content.next_event());
        let found = content.packages.iter_mut().find_map(|p| {
            let v = p
                .versions
                .iter()
                .position(|v| v.tarball.filename == filename)?;
            Some((p, v))
        });
        let Some((package, v)) = found else {
            return Err(UpstreamError::NotServed {
                message: self.not_served(format!("the npm canary serves no tarball {filename}")),
            });
        };
        let old = &package.versions[v];
        let before = Sha256Digest::of(&old.tarball.bytes);
        let mut spec = old.spec.clone();
        spec.files.push((
            format!("replaced-{n}.txt"),
            format!("replaced at the canary during the run ({n})\n").into_bytes(),
        ));
        let published = old.published;
        let new = PackageVersion::build(spec, published, &self.key);
        let after = Sha256Digest::of(&new.tarball.bytes);
        debug_assert_eq!(new.tarball.filename, filename);
        package.versions[v] = new;
        package.modified = package.modified.max(event);
        content.replaced += 1;
        Ok(Observation::UpstreamMutation {
            description: format!(
                "replaced the bytes of {filename} at the npm canary (same name and URL, new integrity)"
            ),
            filename: filename.to_string(),
            before: Some(before),
            after,
        })
    }
}

// ------------------------------------------------------------------ content

fn initial_packages(origin: &str, content: &mut Content, key: &RegistryKey) -> Vec<Package> {
    let tripwire_url = format!("{origin}{TRIPWIRE_PATH}{TRIPWIRE}-0.1.0");
    let tripwire = tripwire_spec(
        TRIPWIRE,
        "Its postinstall script calls the canary tripwire",
        &tripwire_url,
    );
    let template = template_spec(TEMPLATE);
    let present = "Present in the snapshot";
    let table: Vec<(&str, Role, Vec<NpmPackageSpec>)> = vec![
        (
            PRESENT,
            Role::Snapshot,
            vec![
                spec(PRESENT, "1.0.0", present),
                spec(PRESENT, "1.1.0", present),
            ],
        ),
        (
            SCOPED,
            Role::Snapshot,
            vec![spec(SCOPED, "1.0.0", "A scoped package in the snapshot")],
        ),
        (
            UPSTREAM_ONLY,
            Role::UpstreamOnly,
            vec![spec(
                UPSTREAM_ONLY,
                "1.0.0",
                "Only upstream, never in a snapshot",
            )],
        ),
        (TRIPWIRE, Role::Snapshot, vec![tripwire]),
        (TEMPLATE, Role::Snapshot, vec![template]),
        (
            NO_INTEGRITY,
            Role::UpstreamOnly,
            vec![spec(NO_INTEGRITY, "1.0.0", "Listed with no integrity")],
        ),
        (
            BAD_INTEGRITY,
            Role::UpstreamOnly,
            vec![spec(
                BAD_INTEGRITY,
                "1.0.0",
                "Listed with the integrity of other bytes",
            )],
        ),
        (
            OFFSITE,
            Role::UpstreamOnly,
            vec![spec(OFFSITE, "1.0.0", "Its tarball is on another origin")],
        ),
    ];
    table
        .into_iter()
        .map(|(name, role, specs)| {
            let versions: Vec<PackageVersion> = specs
                .into_iter()
                .map(|s| PackageVersion::build(s, event_time(content.next_event()), key))
                .collect();
            // The last version listed is `latest`, as after publishing in order.
            let latest = versions
                .last()
                .map(|v| v.spec.version.clone())
                .unwrap_or_default();
            let modified = versions.iter().map(|v| v.published).max().unwrap_or(0);
            Package {
                name: name.to_string(),
                role,
                versions,
                dist_tags: BTreeMap::from([("latest".to_string(), latest)]),
                modified,
                offsite: name == OFFSITE,
                dated: true,
                shasum: false,
            }
        })
        .collect()
}

/// The conformance kit's packages, built by the kit's own code with the
/// tripwire aimed at `origin` (the same tarballs as `kit --canary ORIGIN`),
/// each version published in the kit's order, the last one `latest`.
fn kit_packages(origin: &str, content: &mut Content, key: &RegistryKey) -> Vec<Package> {
    let mut packages: Vec<Package> = Vec::new();
    for s in kit::specs(origin) {
        let version = PackageVersion::build(s, event_time(content.next_event()), key);
        let (name, number, published) = (
            version.spec.name.clone(),
            version.spec.version.clone(),
            version.published,
        );
        let i = match packages.iter().position(|p| p.name == name) {
            Some(i) => i,
            None => {
                packages.push(Package {
                    name,
                    role: Role::Kit,
                    versions: Vec::new(),
                    dist_tags: BTreeMap::new(),
                    modified: 0,
                    offsite: false,
                    dated: true,
                    shasum: false,
                });
                packages.len() - 1
            }
        };
        let Some(p) = packages.get_mut(i) else {
            continue;
        };
        p.versions.push(version);
        p.dist_tags.insert("latest".into(), number);
        p.modified = published;
    }
    packages
}

/// The universe's packages (see [`super::universe`]), each version at its
/// publish time.
fn universe_packages(universe: Universe, key: &RegistryKey) -> Vec<Package> {
    universe::packages(universe)
        .into_iter()
        .map(|u| {
            let versions: Vec<PackageVersion> = u
                .versions
                .into_iter()
                .map(|(spec, at)| PackageVersion::build(spec, at, key))
                .collect();
            let modified = versions.iter().map(|v| v.published).max().unwrap_or(0);
            Package {
                name: u.name.to_string(),
                role: Role::Universe,
                versions,
                dist_tags: u.dist_tags,
                modified,
                offsite: false,
                dated: u.dated,
                shasum: true,
            }
        })
        .collect()
}

/// What a registry signature covers: `<name>@<version>:<integrity>`.
pub fn signed_message(name: &str, version: &str, integrity: &str) -> String {
    format!("{name}@{version}:{integrity}")
}

/// What the packuments list as the digest of a version of `name`.
fn listed_for(name: &str, v: &PackageVersion) -> Listed {
    match name {
        NO_INTEGRITY => Listed::Nothing,
        // Well-formed (sha512, 64 bytes in base64), but of other bytes.
        BAD_INTEGRITY => Listed::Other(egress_artifacts::sri_sha512(
            format!("not the tarball of {} {}\n", name, v.spec.version).as_bytes(),
        )),
        _ => Listed::Served,
    }
}

// ------------------------------------------------------------------ documents

/// The absolute URL of a tarball at `origin`.
fn tarball_url(origin: &str, name: &str, version: &str) -> String {
    format!("{origin}{}", tarball_path(name, version))
}

/// What the documents name besides the content: the registry's own
/// origin, the CDN's, and the signing key's id.
#[derive(Clone, Copy)]
struct Docs<'a> {
    main: &'a str,
    cdn: &'a str,
    keyid: &'a str,
}

impl<'a> Docs<'a> {
    fn of(&self, p: &Package) -> &'a str {
        if p.offsite {
            self.cdn
        } else {
            self.main
        }
    }
}

fn dist(docs: Docs<'_>, p: &Package, v: &PackageVersion) -> serde_json::Value {
    let mut dist = serde_json::json!({
        "tarball": tarball_url(docs.of(p), &p.name, &v.spec.version),
    });
    if let Some(integrity) = v.listed_integrity() {
        dist["integrity"] = integrity.into();
    }
    if p.shasum {
        let sha1 = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, &v.tarball.bytes);
        let hex: String = sha1.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        dist["shasum"] = hex.into();
    }
    if let Some(sig) = &v.signature {
        dist["signatures"] = serde_json::json!([{ "keyid": docs.keyid, "sig": sig }]);
    }
    dist
}

/// A version as the full packument (and `/<name>/<version>`) gives it: its
/// package.json plus `_id`, `dist` and the readme.
fn full_version(origin: Docs<'_>, p: &Package, v: &PackageVersion) -> serde_json::Value {
    let mut doc = v.spec.package_json();
    doc["_id"] = format!("{}@{}", p.name, v.spec.version).into();
    doc["dist"] = dist(origin, p, v);
    if let Some(readme) = &v.spec.readme {
        doc["readme"] = readme.clone().into();
        doc["readmeFilename"] = "README.md".into();
    }
    doc
}

fn full_packument(origin: Docs<'_>, p: &Package) -> serde_json::Value {
    let versions: serde_json::Map<String, serde_json::Value> = p
        .versions
        .iter()
        .map(|v| (v.spec.version.clone(), full_version(origin, p, v)))
        .collect();
    let mut time = serde_json::Map::new();
    time.insert("created".into(), iso_time(p.created()).into());
    time.insert("modified".into(), iso_time(p.modified).into());
    for v in &p.versions {
        time.insert(v.spec.version.clone(), iso_time(v.published).into());
    }

    let latest = p
        .dist_tags
        .get("latest")
        .and_then(|l| p.version(l))
        .or(p.versions.last());
    let (description, readme) = latest
        .map(|v| (v.spec.description.clone(), v.spec.readme.clone()))
        .unwrap_or_default();
    let mut doc = serde_json::json!({
        "_id": p.name,
        "name": p.name,
        "description": description,
        "dist-tags": p.dist_tags,
        "versions": versions,
        "time": time,
        "readme": readme.unwrap_or_default(),
        "readmeFilename": "README.md",
        "license": "Apache-2.0",
    });
    if !p.dated {
        undated(&mut doc, "time");
    }
    doc
}

/// `doc` without its field `key`: a packument of a package whose times
/// are not listed.
fn undated(doc: &mut serde_json::Value, key: &str) {
    if let Some(fields) = doc.as_object_mut() {
        fields.remove(key);
    }
}

/// npm's abbreviated metadata: per version only what installing needs.
fn abbreviated_packument(origin: Docs<'_>, p: &Package) -> serde_json::Value {
    let versions: serde_json::Map<String, serde_json::Value> = p
        .versions
        .iter()
        .map(|v| {
            let mut doc = serde_json::json!({
                "name": p.name,
                "version": v.spec.version,
                "dependencies": v.spec.dependencies,
                "dist": dist(origin, p, v),
            });
            // What installing needs of package.json beyond `dependencies`,
            // when set (npm's abbreviated form lists these too).
            let full = v.spec.package_json();
            for key in [
                "peerDependencies",
                "peerDependenciesMeta",
                "optionalDependencies",
                "os",
                "cpu",
                "libc",
            ] {
                if let Some(value) = full.get(key) {
                    doc[key] = value.clone();
                }
            }
            if v.spec.has_install_script() {
                doc["hasInstallScript"] = true.into();
            }
            (v.spec.version.clone(), doc)
        })
        .collect();
    let mut doc = serde_json::json!({
        "name": p.name,
        "modified": iso_time(p.modified),
        "dist-tags": p.dist_tags,
        "versions": versions,
    });
    if !p.dated {
        undated(&mut doc, "modified");
    }
    doc
}

// ------------------------------------------------------------------ routing

/// What a GET names.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    Packument(String),
    /// One version's manifest, by version or dist-tag.
    Version(String, &'a str),
    Tarball(String, &'a str),
}

/// Parses a raw path: `/<name>`, `/@scope%2fname` or `/@scope/name`,
/// optionally followed by `/<version-or-tag>` or `/-/<file>`. A trailing
/// `/` after the name is allowed. Nothing else is decoded.
fn route(path: &str) -> Option<Route<'_>> {
    let p = path.strip_prefix('/')?;
    let (name, rest) = match p.strip_prefix('@') {
        Some(scoped) => {
            let sep = scoped.find(['/', '%'])?;
            let (scope, after) = scoped.split_at(sep);
            let after = if let Some(a) = after.strip_prefix('/') {
                a
            } else if after
                .get(..3)
                .is_some_and(|s| s.eq_ignore_ascii_case("%2f"))
            {
                after.get(3..)?
            } else {
                return None;
            };
            let end = after.find('/').unwrap_or(after.len());
            let (bare, rest) = after.split_at(end);
            (format!("@{scope}/{bare}"), rest)
        }
        None => {
            let end = p.find('/').unwrap_or(p.len());
            let (bare, rest) = p.split_at(end);
            (bare.to_string(), rest)
        }
    };
    if !egress_artifacts::is_valid_npm_name(&name) {
        return None;
    }
    match rest {
        "" | "/" => Some(Route::Packument(name)),
        _ => {
            let rest = rest.strip_prefix('/')?;
            if let Some(file) = rest.strip_prefix("-/") {
                (!file.is_empty() && !file.contains('/')).then_some(Route::Tarball(name, file))
            } else {
                (!rest.is_empty() && !rest.contains('/') && rest != "-")
                    .then_some(Route::Version(name, rest))
            }
        }
    }
}

fn tarball_reply(v: &PackageVersion) -> Reply {
    Response::new(200)
        .with_header("Content-Type", "application/octet-stream")
        .with_body(v.tarball.bytes.clone())
        .into()
}

fn not_found() -> Reply {
    Response::new(404)
        .with_header("Content-Type", "application/json")
        .with_body("{\"error\":\"Not found\"}")
        .into()
}

fn json(content_type: &str, doc: &serde_json::Value) -> Reply {
    Response::new(200)
        .with_header("Content-Type", content_type)
        .with_header("Vary", "Accept")
        .with_body(doc.to_string())
        .into()
}

/// Whether `Accept` asks for the abbreviated packument (npm sends it with a
/// `q=1.0` ahead of `application/json`). A `q=0` entry does not count.
fn wants_abbreviated(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        Accept::parse(accept)
            .named(ABBREVIATED)
            .is_some_and(|q| q > 0)
    })
}

impl State {
    fn origin(&self) -> &str {
        self.origin.get().map_or("", String::as_str)
    }

    fn cdn_origin(&self) -> &str {
        self.cdn_origin.get().map_or("", String::as_str)
    }

    fn docs(&self) -> Docs<'_> {
        Docs {
            main: self.origin(),
            cdn: self.cdn_origin(),
            keyid: &self.key.keyid,
        }
    }

    /// The origin that serves `p`'s tarballs.
    fn package_origin(&self, p: &Package) -> &str {
        self.docs().of(p)
    }

    /// The CDN origin: only [`OFFSITE`]'s tarballs; every request logged.
    fn handle_cdn(&self, req: &Request) -> Reply {
        if self.log.record(req) {
            return Response::text(200, "tripped\n").into();
        }
        if !req.method.is_read() {
            return Response::new(405)
                .with_header("Allow", "GET, HEAD")
                .with_body("")
                .into();
        }
        let content = lock(&self.content);
        let found = match route(req.path()) {
            Some(Route::Tarball(name, file)) => content
                .package(&name)
                .filter(|p| p.offsite)
                .and_then(|p| p.versions.iter().find(|v| v.tarball.filename == file)),
            _ => None,
        };
        match found {
            Some(v) => tarball_reply(v),
            None => not_found(),
        }
    }

    /// `message`, with what to do about it when the canary serves the kit.
    fn not_served(&self, message: String) -> String {
        if self.kit {
            format!("{message}; {}", control::not_served_advice(self.origin()))
        } else {
            message
        }
    }

    fn handle(&self, req: &Request) -> Reply {
        if let Some(reply) = control::intercept(self.secret.as_ref(), req, self) {
            return reply;
        }
        let tripwire = self.log.record(req);
        if tripwire {
            return Response::text(200, "tripped\n").into();
        }
        if !req.method.is_read() {
            // Publish, unpublish, dist-tag changes, adduser, login, audit...
            return Response::new(405)
                .with_header("Allow", "GET, HEAD")
                .with_header("Content-Type", "application/json")
                .with_body("{\"error\":\"the canary upstream accepts no writes\"}")
                .into();
        }
        let path = req.path();
        if path == KEYS_PATH {
            return Response::new(200)
                .with_header("Content-Type", "application/json")
                .with_body(self.key.keys_document().to_string())
                .into();
        }
        if path.starts_with("/-/") {
            return not_found();
        }
        let content = lock(&self.content);
        let origin = self.docs();
        match route(path) {
            Some(Route::Packument(name)) => match content.package(&name) {
                Some(p) if wants_abbreviated(req.header("accept")) => {
                    json(ABBREVIATED, &abbreviated_packument(origin, p))
                }
                Some(p) => json("application/json", &full_packument(origin, p)),
                None => not_found(),
            },
            Some(Route::Version(name, wanted)) => {
                let Some(p) = content.package(&name) else {
                    return not_found();
                };
                let version = p.dist_tags.get(wanted).map_or(wanted, String::as_str);
                match p.version(version) {
                    Some(v) => json("application/json", &full_version(origin, p, v)),
                    None => not_found(),
                }
            }
            Some(Route::Tarball(name, file)) => {
                // The CDN origin alone serves offsite tarballs.
                let found = content
                    .package(&name)
                    .filter(|p| !p.offsite)
                    .and_then(|p| p.versions.iter().find(|v| v.tarball.filename == file));
                let Some(v) = found else {
                    return not_found();
                };
                let reply = tarball_reply(v);
                // The delay is served with the lock released, so that a slow
                // tarball slows nothing else.
                if let Some(delay) = content.slow.get(file).copied() {
                    drop(content);
                    std::thread::sleep(delay);
                }
                reply
            }
            None => not_found(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let pack = |n: &str| Some(Route::Packument(n.to_string()));
        assert_eq!(route("/ec-present"), pack("ec-present"));
        assert_eq!(route("/ec-present/"), pack("ec-present"));
        assert_eq!(route("/@ec%2fscoped"), pack("@ec/scoped"));
        assert_eq!(route("/@ec%2Fscoped"), pack("@ec/scoped"));
        assert_eq!(route("/@ec/scoped"), pack("@ec/scoped"));
        assert_eq!(
            route("/@ec/scoped/-/scoped-1.0.0.tgz"),
            Some(Route::Tarball("@ec/scoped".into(), "scoped-1.0.0.tgz"))
        );
        assert_eq!(
            route("/ec-present/latest"),
            Some(Route::Version("ec-present".into(), "latest"))
        );
        for bad in [
            "",
            "/",
            "ec",
            "/@ec",
            "/@ec%2f",
            "/@ec%2escoped",
            "/EC",
            "/..",
            "/a/b/c",
            "/a/-/",
            "/a/-/x/y",
            "/%2e%2e",
            "/@ec%252fscoped",
        ] {
            assert_eq!(route(bad), None, "{bad}");
        }
    }

    #[test]
    fn accept() {
        assert!(wants_abbreviated(Some(
            "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
        )));
        assert!(!wants_abbreviated(Some("application/json")));
        assert!(!wants_abbreviated(Some(
            "application/vnd.npm.install-v1+json;q=0, application/json"
        )));
        assert!(!wants_abbreviated(None));
    }

    #[test]
    fn times() {
        assert_eq!(iso_time(event_time(0)), "2025-01-01T00:00:00.000Z");
        assert_eq!(iso_time(event_time(3_661)), "2025-01-01T01:01:01.000Z");
        assert_eq!(iso_time(event_time(1_000_000)), "2025-01-01T23:59:59.000Z");
        assert_eq!(iso_time(1_748_736_000), "2025-06-01T00:00:00.000Z");
    }
}
