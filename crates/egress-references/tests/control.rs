//! Hostile clients of the standalone canary's control API: without the
//! secret, with a wrong one, one of the wrong length, in another case or
//! encoding, or in the path, a request for the log or a control gets
//! exactly the answer an unknown route gets, changes nothing, and is logged
//! as a plain request (never a tripwire hit). With the secret, the API
//! works and is not logged. Both protocols.

use egress_model::{Exchange, Upstream, Url};
use egress_references::control::{Secret, ServeOptions, CONTROL_PREFIX};
use egress_references::npm::canary::NpmCanary;
use egress_references::remote::RemoteCanary;
use egress_references::Canary;
use egress_transcript::{Client, Limits};
use std::time::Duration;

fn client(base: &str) -> Client {
    Client::new(Url::parse(base).unwrap(), Limits::default(), None).unwrap()
}

/// Every control route, as (method, route, body).
const ROUTES: &[(&str, &str, &str)] = &[
    ("GET", "plan", ""),
    ("GET", "mark", ""),
    ("GET", "requests?since=0", ""),
    ("POST", "publish", r#"{"project":"ec-present"}"#),
    ("POST", "replace", r#"{"filename":"ec-present-1.0.0.tgz"}"#),
    (
        "POST",
        "replace",
        r#"{"filename":"ec_present-1.0.0-py3-none-any.whl"}"#,
    ),
    (
        "POST",
        "move-tag",
        r#"{"project":"ec-present","tag":"latest","version":"1.0.0"}"#,
    ),
];

/// `Authorization` header lines that must not open the API, for `secret`.
fn hostile_headers(secret: &Secret) -> Vec<String> {
    let s = secret.as_str();
    let other = Secret::generate().unwrap();
    let b64 = egress_model::base64::encode(s.as_bytes());
    let raw: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    vec![
        String::new(),
        format!("Authorization: Bearer {}\r\n", other.as_str()),
        format!("Authorization: Bearer {}\r\n", &s[..63]),
        format!("Authorization: Bearer {}\r\n", &s[..32]),
        format!("Authorization: Bearer {s}0\r\n"),
        format!("Authorization: Bearer {s}{s}\r\n"),
        "Authorization: Bearer \r\n".to_string(),
        format!("Authorization: Bearer {}\r\n", s.to_ascii_uppercase()),
        format!("Authorization: bearer {s}\r\n"),
        format!("Authorization: Bearer  {s}\r\n"),
        format!("Authorization: {s}\r\n"),
        format!(
            "Authorization: Basic {}\r\n",
            egress_model::base64::encode(format!("x:{s}").as_bytes())
        ),
        format!("Authorization: Bearer {b64}\r\n"),
        format!(
            "Authorization: Bearer {}\r\n",
            egress_model::base64::encode(&raw)
        ),
        format!(
            "Authorization: Bearer %{}\r\n",
            s.as_bytes()
                .chunks(2)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
                .join("%")
        ),
        format!(
            "Authorization: Bearer {}\r\nAuthorization: Bearer {s}\r\n",
            other.as_str()
        ),
        format!("Authorization: Bearer {s}\r\nAuthorization: Bearer {s}\r\n"),
        format!("X-Authorization: Bearer {s}\r\n"),
        format!("Cookie: secret={s}\r\n"),
    ]
}

fn raw(method: &str, target: &str, host: &str, auth: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {target} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Status line, headers and body of an answer.
fn answer(ex: &Exchange) -> (String, Vec<(String, String)>, Vec<u8>) {
    let r = ex
        .response
        .as_ref()
        .unwrap_or_else(|| panic!("{}", ex.summary()));
    (
        r.status_line.clone(),
        r.headers.clone(),
        r.full_body().expect("whole body").to_vec(),
    )
}

/// Sends every hostile request and its decoy (the same request to a path
/// the canary does not serve) and asserts that their answers are equal.
/// Returns how many requests were sent.
fn hostile_round(base: &str, secret: &Secret) -> u64 {
    let c = client(base);
    let host = Url::parse(base).unwrap().host_header();
    let mut sent = 0;
    let s = secret.as_str();
    let mut targets: Vec<(String, String, String)> = Vec::new();
    for (method, route, body) in ROUTES {
        targets.push((
            method.to_string(),
            format!("{CONTROL_PREFIX}{route}"),
            body.to_string(),
        ));
    }
    // The secret in the path or the query, never a way in.
    targets.push((
        "GET".into(),
        format!("{CONTROL_PREFIX}{s}/plan"),
        String::new(),
    ));
    targets.push((
        "GET".into(),
        format!("/{s}{CONTROL_PREFIX}plan"),
        String::new(),
    ));
    targets.push((
        "GET".into(),
        format!("{CONTROL_PREFIX}plan?secret={s}"),
        String::new(),
    ));
    targets.push((
        "GET".into(),
        format!("{CONTROL_PREFIX}requests?since=0&token={s}"),
        String::new(),
    ));
    for auth in hostile_headers(secret) {
        for (method, target, body) in &targets {
            let decoy = target.replacen("/_egress-canary/", "/_egress-canarz/", 1);
            let got = c.send_raw("hostile", &raw(method, target, &host, &auth, body));
            let want = c.send_raw("decoy", &raw(method, &decoy, &host, &auth, body));
            sent += 2;
            assert_eq!(
                answer(&got),
                answer(&want),
                "{method} {target} with {auth:?} is told apart from an unknown route"
            );
            let status = got.status().unwrap();
            assert!(
                status == 404 || status == 405,
                "{method} {target}: {status}"
            );
        }
    }
    // Encodings of the prefix, with the right secret: not the control API.
    let auth = format!("Authorization: {}\r\n", secret.header_value());
    for target in [
        "/%5fegress-canary/plan",
        "/_egress-canary%2fplan",
        "/_EGRESS-CANARY/plan",
        "//_egress-canary/plan",
        "/./_egress-canary/plan",
    ] {
        let got = c.send_raw("encoded prefix", &raw("GET", target, &host, &auth, ""));
        let decoy = c.send_raw(
            "decoy",
            &raw("GET", "/_egress-canarz/plan", &host, &auth, ""),
        );
        sent += 2;
        assert_eq!(got.status(), decoy.status(), "{target}");
        assert_eq!(answer(&got).2, answer(&decoy).2, "{target}");
    }
    sent
}

/// Runs the hostile round against a canary's `base`, then checks through
/// the secret that nothing changed and that every hostile request was
/// logged as a plain request.
fn hostile_clients_get_nothing(base: &str, secret: &Secret, up: &dyn Upstream, page: &str) {
    let c = client(base);
    let before = answer(&c.get("page", page, None));
    let mark = up.mark();
    let plan_before = up.plan();
    let sent = hostile_round(base, secret);
    let log = up.requests_since(mark);
    assert_eq!(
        log.len() as u64,
        sent,
        "every hostile request is logged, once"
    );
    assert!(log.iter().all(|r| !r.tripwire), "no tripwire hit");
    assert_eq!(
        answer(&c.get("page", page, None)),
        before,
        "nothing changed"
    );
    assert_eq!(up.plan(), plan_before);

    // With the secret: the API answers, and its requests are not logged.
    let remote =
        RemoteCanary::connect(&Url::parse(base).unwrap(), secret, Duration::from_secs(5)).unwrap();
    assert_eq!(remote.plan(), plan_before);
    let m = remote.mark();
    assert_eq!(m, up.mark(), "an authorised request is not logged");
    assert!(remote.requests_since(m).is_empty());
    let all = remote.requests_since(0);
    assert_eq!(all.len() as u64, m);
    assert!(remote.failure().is_none());
    // A wrong secret cannot connect, and says so in one line.
    let wrong = RemoteCanary::connect(
        &Url::parse(base).unwrap(),
        &Secret::generate().unwrap(),
        Duration::from_secs(5),
    );
    let e = wrong.err().expect("a wrong secret is refused").to_string();
    assert!(e.contains("404") && !e.contains('\n'), "{e}");
}

fn standalone() -> (ServeOptions, Secret) {
    let secret = Secret::generate().unwrap();
    let options = ServeOptions {
        secret: Some(secret.clone()),
        ..ServeOptions::default()
    };
    (options, secret)
}

#[test]
fn hostile_clients_of_the_pypi_canary_get_nothing() {
    let (options, secret) = standalone();
    let canary = Canary::serve(&options).unwrap();
    hostile_clients_get_nothing(&canary.base_url(), &secret, &canary, "/simple/ec-present/");
    canary.stop();
}

#[test]
fn hostile_clients_of_the_npm_canary_get_nothing() {
    let (options, secret) = standalone();
    let canary = NpmCanary::serve(&options).unwrap();
    hostile_clients_get_nothing(&canary.base_url(), &secret, &canary, "/ec-present");
    canary.stop();
}

#[test]
fn an_in_process_canary_has_no_control_api() {
    let canary = Canary::start().unwrap();
    let c = client(&canary.base_url());
    let ex = c.send(
        "plan",
        &egress_transcript::Request::get("/_egress-canary/plan").header("Authorization", "Bearer "),
    );
    assert_eq!(ex.status(), Some(404));
    canary.stop();
}

#[test]
fn the_control_api_drives_the_canary() {
    let (options, secret) = standalone();
    let canary = NpmCanary::serve(&options).unwrap();
    let remote = RemoteCanary::connect(
        &Url::parse(&canary.base_url()).unwrap(),
        &secret,
        Duration::from_secs(5),
    )
    .unwrap();
    let present = egress_model::ProjectName::new("ec-present").unwrap();
    let published = remote.publish_new_version(&present).unwrap();
    assert!(matches!(
        published,
        egress_model::Observation::UpstreamMutation { .. }
    ));
    assert_eq!(
        canary.dist_tag("ec-present", "latest").as_deref(),
        Some("9.9.9")
    );
    remote.move_tag("ec-present", "latest", "1.0.0").unwrap();
    assert_eq!(
        canary.dist_tag("ec-present", "latest").as_deref(),
        Some("1.0.0")
    );
    remote.replace_file_bytes("ec-present-1.0.0.tgz").unwrap();
    // The canary's own refusals come back typed.
    let e = remote.replace_file_bytes("nothing-1.0.0.tgz").unwrap_err();
    assert!(
        matches!(e, egress_model::UpstreamError::NotServed { .. }),
        "{e:?}"
    );
    assert!(remote.failure().is_none());
    // A canary that goes away mid-run is remembered as a failure.
    canary.stop();
    let _ = remote.mark();
    assert!(remote.failure().is_some());
}

/// A control API that answers garbage, nothing, or something else than its
/// documents is refused when connecting, in one line, never taken for a
/// canary; one that starts answering garbage mid-run is remembered.
#[test]
fn a_control_api_that_answers_garbage_is_refused() {
    use egress_references::hostile::{self, Hostile};
    let secret = Secret::generate().unwrap();
    let timeout = Duration::from_secs(2);
    for kind in [
        Hostile::Everything404,
        Hostile::Everything403,
        Hostile::Garbage,
        Hostile::Reset,
        Hostile::RedirectLoop,
        Hostile::HugeDeclaredLength,
        Hostile::EndlessBody,
    ] {
        let server = hostile::start(kind).unwrap();
        let url = Url::parse(&server.base_url()).unwrap();
        let e = RemoteCanary::connect(&url, &secret, timeout)
            .err()
            .unwrap_or_else(|| panic!("{kind:?} taken for a canary"))
            .to_string();
        assert!(
            !e.contains('\n') && e.contains("control API"),
            "{kind:?}: {e}"
        );
        server.stop();
    }
    // 200 with JSON that is not the API's.
    let wrong = egress_http::Server::bind_loopback(|_req: egress_http::Request| {
        egress_http::Response::new(200)
            .with_header("Content-Type", "application/json")
            .with_body("{\"mark\": \"seven\", \"origin\": 3}")
            .into()
    })
    .unwrap();
    let url = Url::parse(&wrong.base_url()).unwrap();
    assert!(RemoteCanary::connect(&url, &secret, timeout).is_err());
    wrong.stop();
}
