//! Replay-only by construction: nothing the mirror links can open an
//! outbound connection. Checked on the real dependency graph, crates and
//! their enabled features, with `cargo tree -e normal,features`.
//!
//! Allowed: hyper with server features, rustls and tokio-rustls (TLS on the
//! serving side), tokio (the serving core). Forbidden: every HTTP client
//! crate, the client features of hyper and hyper-util, and
//! egress-transcript (the suite's own client).

use std::process::Command;

/// Crates that exist to make requests.
const FORBIDDEN_CRATES: &[&str] = &[
    "reqwest",
    "ureq",
    "isahc",
    "curl",
    "attohttpc",
    "surf",
    "awc",
    "minreq",
    "http_req",
    "egress-transcript",
];

/// `(crate, feature)` pairs that compile a client into an allowed crate.
const FORBIDDEN_FEATURES: &[(&str, &str)] = &[
    ("hyper", "client"),
    ("hyper-util", "client"),
    ("hyper-util", "client-legacy"),
    ("hyper-util", "client-proxy"),
];

/// One line of `cargo tree --prefix none -e normal,features`.
#[derive(Debug, PartialEq, Eq)]
enum Node<'a> {
    /// `name vX.Y.Z ...`
    Crate(&'a str),
    /// `name feature "feat"`
    Feature(&'a str, &'a str),
}

fn parse_line(line: &str) -> Option<Node<'_>> {
    let line = line.trim();
    let (name, rest) = line.split_once(' ')?;
    if let Some(feature) = rest.strip_prefix("feature \"") {
        let feature = feature.split('"').next()?;
        return Some(Node::Feature(name, feature));
    }
    rest.starts_with('v').then_some(Node::Crate(name))
}

/// Every forbidden crate or feature named in `tree`, as its line.
fn violations(tree: &str) -> Vec<String> {
    tree.lines()
        .filter(|line| match parse_line(line) {
            Some(Node::Crate(name)) => FORBIDDEN_CRATES.contains(&name),
            Some(Node::Feature(name, feature)) => FORBIDDEN_FEATURES.contains(&(name, feature)),
            None => false,
        })
        .map(|line| line.trim().to_string())
        .collect()
}

fn crates(tree: &str) -> Vec<&str> {
    tree.lines()
        .filter_map(|line| match parse_line(line) {
            Some(Node::Crate(name)) => Some(name),
            _ => None,
        })
        .collect()
}

#[test]
fn no_http_client_in_the_dependency_graph() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "egress-mirror",
            "-e",
            "normal,features",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Sanity: this is the mirror's real tree, so the check below has
    // something to look at.
    let names = crates(&stdout);
    for needed in ["egress-mirror", "egress-http", "tokio"] {
        assert!(names.contains(&needed), "{needed} missing from:\n{stdout}");
    }
    assert!(
        stdout
            .lines()
            .any(|l| parse_line(l).is_some_and(|n| matches!(n, Node::Feature("tokio", _)))),
        "no feature lines: was `-e features` honoured?\n{stdout}"
    );
    let bad = violations(&stdout);
    assert!(
        bad.is_empty(),
        "egress-mirror can open outbound connections through: {bad:?}"
    );
}

#[test]
fn the_check_flags_clients_and_allows_servers() {
    // What cargo tree prints, in the forms the check must read.
    let tree = "\
egress-mirror v0.1.0 (/w/crates/egress-mirror)
hyper feature \"server\"
hyper feature \"http2\"
hyper v1.7.0
hyper feature \"client\"
hyper-util feature \"server-auto\"
hyper-util v0.1.17
hyper-util feature \"client-legacy\"
rustls v0.23.31
tokio-rustls v0.26.2
reqwest v0.12.23
reqwest feature \"default\"
egress-transcript v0.1.0 (/w/crates/egress-transcript) (*)
curl-sys v0.4.83
";
    assert_eq!(
        violations(tree),
        vec![
            "hyper feature \"client\"",
            "hyper-util feature \"client-legacy\"",
            "reqwest v0.12.23",
            "egress-transcript v0.1.0 (/w/crates/egress-transcript) (*)",
        ]
    );
    assert_eq!(
        parse_line("hyper feature \"client\""),
        Some(Node::Feature("hyper", "client"))
    );
    assert_eq!(parse_line("tokio v1.54.1"), Some(Node::Crate("tokio")));
    assert!(violations("hyper v1.7.0\nhyper feature \"server\"\nrustls v0.23.31\n").is_empty());
}
