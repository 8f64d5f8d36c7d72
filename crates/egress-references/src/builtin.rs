//! The built-in run, which the command line runs when it is given no
//! command: for every protocol, the suite against reference (A), the
//! reference mirror serving a snapshot of its canary's files, and against
//! reference (B), a conventional caching proxy, each in front of a canary
//! upstream of its own, all on loopback. The pairs themselves are in each
//! protocol's folder; `egress_references::PROTOCOLS` lists them.
//!
//! The snapshots are signed with a fixed demonstration key, which both runs
//! trust, as a lab would trust its own.

use egress_model::npm_name::InvalidNpmName;
use egress_model::report_text::Paint;
use egress_model::url::InvalidUrl;
use egress_model::{Status, Url};
use egress_snapshot::SnapshotError;
use egress_suite::{summary, Report};
use egress_transcript::ClientError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The built-in snapshot's signing key is fixed so runs are reproducible; it
/// signs nothing but this demonstration snapshot.
const DEMO_SEED: [u8; 32] = *b"egress-conformance built-in demo";
pub(crate) const DEMO_PRINCIPAL: &str = "built-in-reference@egress-conformance";

/// Why a built-in run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    /// A canary, a reference or the listener of one did not start.
    #[error("cannot start {what}: {cause}")]
    Start {
        what: &'static str,
        cause: std::io::Error,
    },
    /// The demonstration snapshot could not be built.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    Url(#[from] InvalidUrl),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    NpmName(#[from] InvalidNpmName),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The reference's instance key or binary digest could not be made.
    #[error("cannot set up the reference's instance attestation: {0}")]
    Attestation(String),
    /// A run on a thread of its own panicked.
    #[error("{what} panicked")]
    Panicked { what: String },
}

impl BuiltinError {
    /// For `map_err`: starting `what` failed.
    pub fn start(what: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |cause| Self::Start { what, cause }
    }
}

/// The reports of one protocol's pair.
pub struct Pair {
    pub title: &'static str,
    pub a: Report,
    pub b: Report,
}

impl Pair {
    /// Whether the pair behaves as references: (A) passes everything and
    /// every predicate separates it from (B).
    pub fn holds(&self) -> bool {
        references_hold(&self.a, &self.b)
    }
}

/// The short form of the built-in run (what it prints by default): a
/// line per target, the discrimination matrix by predicate over every
/// protocol, a line per FAIL or INCONCLUSIVE of a reference (A) (none, when
/// the references hold), the predicates each caching proxy (B) fails with
/// the sub-probes that show it, and the outcome: about 45 lines for three
/// protocols, never more than [`SHORT_MAX`].
pub fn summary(pairs: &[Pair], paint: Paint) -> String {
    let width = pairs
        .iter()
        .flat_map(|p| [&p.a, &p.b])
        .map(|r| r.target_name.chars().count() + 6)
        .max()
        .unwrap_or(0);
    let mut lines = vec![
        "The suite against the built-in references on loopback: (A) the reference mirror, (B) a caching proxy,".to_string(),
        "each in front of a canary upstream of its own.".to_string(),
        String::new(),
    ];
    for p in pairs {
        for r in [&p.a, &p.b] {
            // npm's and apt's targets already begin with the protocol's name.
            let name = r
                .target_name
                .strip_prefix(p.title)
                .map_or(r.target_name.as_str(), str::trim_start);
            let label = format!("{:<5} {name}", p.title);
            lines.push(summary::target_line(&label, width, r, paint));
        }
    }
    lines.push(String::new());
    lines.push(
        "Discrimination matrix by predicate (disc: one target passes where the other fails)"
            .to_string(),
    );
    let groups: Vec<summary::Group<'_>> = pairs
        .iter()
        .map(|p| summary::Group {
            title: p.title,
            targets: vec![("(A)", &p.a), ("(B)", &p.b)],
        })
        .collect();
    lines.extend(summary::matrix_lines(&groups, paint));
    let unexpected: usize = pairs
        .iter()
        .map(|p| summary::Counts::of(&p.a))
        .map(|c| c.fail + c.inconclusive)
        .sum();
    if unexpected > 0 {
        lines.push(String::new());
        lines.push(format!(
            "FAIL and INCONCLUSIVE of the references (A) ({unexpected}):"
        ));
        let room = (12 / pairs.len().max(1)).max(2);
        for p in pairs {
            lines.extend(summary::problem_lines(&p.a, room, paint));
        }
    }
    lines.push(String::new());
    lines.push(
        "What each caching proxy (B) fails, by predicate (every reason: --verbose, or --out DIR):"
            .to_string(),
    );
    for p in pairs {
        lines.extend(summary::grouped_problem_lines(p.title, &p.b, paint));
    }
    lines.push(String::new());
    let holds = pairs.iter().all(Pair::holds);
    lines.push(if holds {
        format!(
            "outcome: {} (exit 0): every reference (A) passes everything, and every predicate separates it from (B)",
            paint.verdict("PASS", 0)
        )
    } else {
        let broken: Vec<&str> = pairs.iter().filter(|p| !p.holds()).map(|p| p.title).collect();
        format!(
            "outcome: {} (exit 1): the references do not hold for {}: (A) fails something, or a predicate does not separate (A) from (B)",
            paint.verdict("FAIL", 0),
            broken.join(", ")
        )
    });
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The most lines [`summary`] prints.
pub const SHORT_MAX: usize = 60;

/// Each pair's reports, then its discrimination matrix (`--verbose`).
pub fn text(pairs: &[Pair]) -> String {
    let mut text = String::new();
    for (i, p) in pairs.iter().enumerate() {
        let parts = [
            egress_suite::render::text(&p.a),
            egress_suite::render::text(&p.b),
            format!(
                "Discrimination matrix, {} (yes: one target passes where another fails)\n",
                p.title
            ),
        ];
        if i > 0 {
            text.push('\n');
        }
        text.push_str(&parts.join("\n"));
        text.push('\n');
        text.push_str(&egress_suite::render::matrix_text(&[&p.a, &p.b]));
    }
    text
}

/// The reference mirrors' server limits: the defaults, but for the
/// per-client connection limit. In the built-in run the suite is the only
/// client, from one address, and every refusal it sends is a connection
/// that the mirror answers and then drains before closing; on a loaded
/// machine those draining connections can pass the default 64 while the
/// suite has only four in flight, and a reference that answers 503 then
/// fails what it does not fail. The per-client limit protects a fleet of
/// sandboxes from one of them; that is measured by the load benchmark and
/// the fleet test, not here.
pub fn reference_server_limits() -> egress_http::Limits {
    egress_http::Limits {
        max_connections_per_client: 1024,
        ..egress_http::Limits::default()
    }
}

/// Tight bounds: everything is on loopback and in-process.
pub fn limits() -> egress_transcript::Limits {
    egress_transcript::Limits {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(10),
        ..Default::default()
    }
}

pub(crate) fn client(index: &Url) -> Result<egress_transcript::Client, BuiltinError> {
    Ok(egress_transcript::Client::new(
        index.clone(),
        limits(),
        None,
    )?)
}

pub fn demo_key() -> egress_signing::SigningKey {
    egress_signing::SigningKey::from_seed(DEMO_SEED, DEMO_PRINCIPAL)
}

/// Both runs trust the demonstration key, as a lab would trust its own.
pub fn demo_signers() -> Vec<u8> {
    let line = egress_signing::AllowedSigners::line_for_namespace(
        DEMO_PRINCIPAL,
        &demo_key().public(),
        egress_signing::LAB_NAMESPACES,
    );
    format!("{line}\n").into_bytes()
}

/// The in-process reference's attestor: a fresh instance key, certified by
/// the demonstration key for `snapshot`, reporting this process's binary
/// and that it is not confined (it runs inside the suite's own process).
pub fn demo_attestor(
    snapshot: egress_model::Sha256Digest,
) -> Result<egress_mirror::Attestor, BuiltinError> {
    let key = egress_signing::InstanceKey::generate()
        .map_err(|e| BuiltinError::Attestation(e.to_string()))?;
    let binary =
        egress_mirror::own_binary_sha256().map_err(|e| BuiltinError::Attestation(e.to_string()))?;
    let certificate = egress_signing::Certificate::issue(&demo_key(), &key.public(), snapshot);
    Ok(
        egress_mirror::Attestor::new(key, binary, "NOT confined: an in-process reference")
            .with_certificate(certificate.to_text().into_bytes()),
    )
}

/// Whether a pair behaves as references: (A) passes everything and every
/// predicate separates it from (B).
pub fn references_hold(a: &Report, b: &Report) -> bool {
    let all_discriminate = egress_suite::PREDICATES.iter().all(|(p, _)| {
        a.predicate(p).is_some_and(|v| v.status == Status::Pass)
            && b.predicate(p).is_some_and(|v| v.status == Status::Fail)
    });
    a.exit_code() == 0 && all_discriminate
}

/// A mirror whose listener is bound before its snapshot exists: it answers
/// 503 until the snapshot is set, then is exactly that [`egress_mirror::Mirror`].
/// An npm snapshot needs it: its packuments name the mirror's own address.
#[derive(Clone, Default)]
pub struct LateMirror(Arc<OnceLock<egress_mirror::Mirror>>);

impl LateMirror {
    /// Sets the mirror once; a second call changes nothing.
    pub fn set(&self, mirror: egress_mirror::Mirror) {
        let _ = self.0.set(mirror);
    }
}

impl egress_http::Handler for LateMirror {
    fn handle(&self, req: egress_http::Request) -> egress_http::Reply {
        match self.0.get() {
            Some(m) => m.handle(req),
            None => egress_http::Response::text(503, "starting\n").into(),
        }
    }

    fn vouch_for_file(&self, response: &egress_http::Response, file: &std::fs::File) -> bool {
        self.0
            .get()
            .is_some_and(|m| m.vouch_for_file(response, file))
    }
}
