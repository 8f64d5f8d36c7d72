//! The HTML report: one self-contained file a reviewer opens and clicks
//! through. The matrix per protocol (targets × predicates, and the
//! discrimination matrix when there are several targets) links each cell
//! to its predicate or sub-probe; each sub-probe shows its reason, the
//! digest of its transcript and every exchange that decided it (request and
//! response heads, bodies cut to [`BODY_SHOWN`] bytes, saying how many
//! were cut), each with its own digest ([`crate::digests`]).
//!
//! Nothing loads: no font, image, stylesheet or script from anywhere, and
//! no link leaves the page. The inline style and script are allowed by
//! their SHA-256 in a `Content-Security-Policy` meta tag (`default-src
//! 'none'`), so a body that smuggled markup in could not run even if it
//! escaped [`esc`]. Everything reads with JS off: exchanges are
//! `<details>`, and the FAIL/INCONCLUSIVE filter is a checkbox and CSS. The
//! script only opens the `<details>` a link points into, ticks the filter
//! for a `#only-problems` link, and marks `<html class="js">`.

use crate::combined::Combined;
use crate::digests;
use crate::protocol::{Protocol, SubProbeDoc};
use crate::report::Report;
use crate::subprobe::{Predicate, PREDICATES};
use egress_model::{Exchange, Observation, ProbeRecord, ResponseRecord, Sha256Digest, Status};
use egress_sandbox::ScanReport;
use std::fmt::Write;

/// Body bytes shown per response; the rest is cut, and the page says how
/// many bytes were.
pub const BODY_SHOWN: usize = 2048;
/// Request head bytes shown (a smuggling probe's request can be long).
pub const HEAD_SHOWN: usize = 4096;
/// Upstream log lines shown per observation.
const LOG_SHOWN: usize = 50;

const STYLE: &str = r#"
:root{--pass:#1a7f37;--fail:#cf222e;--inc:#9a6700;--skip:#6e7781;--line:#d0d7de;--soft:#f6f8fa}
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;color:#1f2328}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.25em;border-bottom:1px solid var(--line);padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em;margin:1.2em 0 .4em}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid var(--line);padding:.25em .6em;text-align:left;vertical-align:top}
th{background:var(--soft)}td a,th a{text-decoration:none;color:inherit}
.st{font-weight:600;font-family:ui-monospace,monospace;font-size:.92em}
.s-pass .st,.st.s-pass{color:var(--pass)}.s-fail .st,.st.s-fail{color:var(--fail)}
.s-inconclusive .st,.st.s-inconclusive{color:var(--inc)}.s-skipped .st,.st.s-skipped{color:var(--skip)}
td.s-fail{background:#ffebe9}td.s-inconclusive{background:#fff8c5}td.s-pass{background:#dafbe1}
code,pre{font-family:ui-monospace,monospace;font-size:.9em}
pre{background:var(--soft);border:1px solid var(--line);padding:.5em;white-space:pre-wrap;overflow-wrap:anywhere;max-height:30em;overflow:auto;margin:.3em 0}
.probe{border-left:4px solid var(--line);padding:.2em .8em;margin:.6em 0}
.probe.s-fail{border-color:var(--fail)}.probe.s-inconclusive{border-color:var(--inc)}.probe.s-pass{border-color:var(--pass)}
.doc,.meta,.cut{color:#57606a;font-size:.92em}.digest{font-family:ui-monospace,monospace;font-size:.85em;overflow-wrap:anywhere}
details.ex{margin:.3em 0}details.ex>summary{cursor:pointer;font-family:ui-monospace,monospace;font-size:.9em;overflow-wrap:anywhere}
:target{outline:2px solid #0969da;outline-offset:2px}
.banner{border:3px solid var(--fail);background:#ffebe9;padding:.8em 1em;margin:1em 0}.banner h2{border:0;margin:0;color:var(--fail)}
.filter{margin:1em 0;padding:.4em .8em;background:var(--soft);border:1px solid var(--line)}
#only-problems:checked~main .s-pass.probe,#only-problems:checked~main .s-skipped.probe,#only-problems:checked~main tr.quiet,#only-problems:checked~main section.quiet{display:none}
"#;

const SCRIPT: &str = "document.documentElement.classList.add('js');\
if(location.hash==='#only-problems'){document.getElementById('only-problems').checked=true;}\
function openTarget(){var h=location.hash.slice(1),e=h&&document.getElementById(decodeURIComponent(h));\
for(;e;e=e.parentElement){if(e.tagName==='DETAILS'){e.open=true;}}}\
addEventListener('hashchange',openTarget);openTarget();";

/// `s` as HTML text or attribute value: markup characters as references,
/// control characters (other than newline, carriage return and tab) as
/// U+FFFD.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `'sha256-…'`, the CSP source that allows exactly this inline text.
fn csp_hash(text: &str) -> String {
    format!(
        "'sha256-{}'",
        egress_model::base64::encode(Sha256Digest::of(text.as_bytes()).as_bytes())
    )
}

/// The page around `body`: the CSP that allows only the inline style and
/// script, then the FAIL/INCONCLUSIVE filter (when `filter`), then `body`.
fn page(title: &str, filter: bool, body: &str) -> String {
    let csp = format!(
        "default-src 'none'; style-src {}; script-src {}; base-uri 'none'; form-action 'none'",
        csp_hash(STYLE),
        csp_hash(SCRIPT)
    );
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{0}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{0}</h1>\n",
        esc(title)
    );
    if filter {
        out.push_str(
            "<input type=\"checkbox\" id=\"only-problems\">\
             <label for=\"only-problems\" class=\"filter\">show only FAIL and INCONCLUSIVE</label>\n",
        );
    }
    out.push_str("<main>\n");
    out.push_str(body);
    let _ = write!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

fn class(s: Status) -> &'static str {
    match s {
        Status::Pass => "s-pass",
        Status::Fail => "s-fail",
        Status::Inconclusive => "s-inconclusive",
        Status::Skipped => "s-skipped",
    }
}

fn problem(s: Status) -> bool {
    matches!(s, Status::Fail | Status::Inconclusive)
}

/// The anchor of report `r`'s part `part` (a predicate or sub-probe id).
fn anchor(r: usize, part: &str) -> String {
    format!("r{r}-{part}")
}

/// The page of one or more suite reports: the matrix of each protocol,
/// then each report's predicates, sub-probes and exchanges.
pub fn reports(reports: &[&Report]) -> String {
    let title = match reports {
        [one] => format!("egress-conformance: {}", one.target_name),
        _ => "egress-conformance: the built-in run".to_string(),
    };
    let mut body = summary(reports);
    body.push_str(&matrices(reports));
    for (i, r) in reports.iter().enumerate() {
        body.push_str(&report_section(i, r));
    }
    page(&title, true, &body)
}

/// The page of `check --from-sandbox`: the check's report, then the scan's.
pub fn combined(both: &Combined) -> String {
    let title = format!(
        "egress-conformance check --from-sandbox: {}",
        both.check.target_name
    );
    let mut body = format!(
        "<p>combined outcome (check and sandbox scan): <span class=\"st {}\">{}</span></p>\n",
        class(both.outcome),
        both.outcome
    );
    body.push_str(&summary(&[&both.check]));
    body.push_str(&matrices(&[&both.check]));
    body.push_str(&report_section(0, &both.check));
    body.push_str(&scan_section(&both.scan));
    page(&title, true, &body)
}

/// The page of a sandbox scan.
pub fn scan(report: &ScanReport) -> String {
    let title = format!("egress-conformance sandbox-scan: {}", report.plan.mirror);
    page(&title, true, &scan_section(report))
}

/// The page of a saved report that does not verify: a banner naming each
/// verdict that the evidence does not support, as (id, recorded,
/// re-derived), and no matrix.
pub fn unverified(file: &str, diffs: &[(String, String, String)]) -> String {
    let title = format!("egress-conformance: {file} does not verify");
    let mut body = format!(
        "<div class=\"banner\" id=\"does-not-verify\">\n<h2>does not verify</h2>\n\
         <p><code>{}</code>: {} verdict(s) differ from what the recorded evidence supports. \
         The report was changed after the run (or made by another judge); its verdicts are \
         not shown as a matrix. <code>egress-conformance report verify</code> says the same.</p>\n",
        esc(file),
        diffs.len()
    );
    body.push_str("<table>\n<tr><th>verdict</th><th>recorded</th><th>re-derived from the evidence</th></tr>\n");
    for (id, recorded, derived) in diffs {
        let _ = writeln!(
            body,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            esc(id),
            esc(recorded),
            esc(derived)
        );
    }
    body.push_str("</table>\n</div>\n");
    page(&title, false, &body)
}

/// One line per report: target, protocol, URL, outcome, with a link.
fn summary(reports: &[&Report]) -> String {
    let mut out = String::from(
        "<table class=\"targets\">\n<tr><th>target</th><th>protocol</th><th>URL</th><th>outcome</th></tr>\n",
    );
    for (i, r) in reports.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td><a href=\"#r{i}\">{}</a></td><td>{}</td><td><code>{}</code></td><td class=\"st {}\">{}</td></tr>",
            class(r.outcome),
            esc(&r.target_name),
            r.plan.protocol(),
            esc(&r.plan.index_url),
            class(r.outcome),
            r.outcome
        );
    }
    out.push_str("</table>\n");
    out
}

/// A status cell linking to `href`.
fn cell(s: Status, href: &str, why: &str) -> String {
    format!(
        "<td class=\"st {}\" title=\"{}\"><a href=\"#{}\">{s}</a></td>",
        class(s),
        esc(why),
        esc(href)
    )
}

/// Per protocol, in the order the reports come: targets × predicates, and
/// with several targets the discrimination matrix (sub-probes × targets).
fn matrices(reports: &[&Report]) -> String {
    let mut out = String::new();
    let mut protocols: Vec<Protocol> = Vec::new();
    for r in reports {
        if !protocols.contains(&r.plan.protocol()) {
            protocols.push(r.plan.protocol());
        }
    }
    for protocol in protocols {
        let group: Vec<(usize, &Report)> = reports
            .iter()
            .enumerate()
            .filter(|(_, r)| r.plan.protocol() == protocol)
            .map(|(i, r)| (i, *r))
            .collect();
        let _ = write!(
            out,
            "<section class=\"matrix\" id=\"matrix-{protocol}\">\n<h2>{protocol}: predicates</h2>\n\
             <table class=\"predicates\">\n<tr><th>target</th>"
        );
        for (pid, name) in PREDICATES {
            let _ = write!(out, "<th title=\"{}\">{pid}</th>", esc(name));
        }
        out.push_str("<th>outcome</th></tr>\n");
        for (i, r) in &group {
            let quiet = !r.predicates.iter().any(|p| problem(p.status));
            let _ = write!(
                out,
                "<tr{}><th><a href=\"#r{i}\">{}</a></th>",
                if quiet { " class=\"quiet\"" } else { "" },
                esc(&r.target_name)
            );
            for (pid, _) in PREDICATES {
                let (s, why) = r
                    .predicate(pid)
                    .map_or((Status::Skipped, "not in the report"), |p| {
                        (p.status, p.reason.as_str())
                    });
                out.push_str(&cell(s, &anchor(*i, pid.as_str()), why));
            }
            let _ = writeln!(
                out,
                "<td class=\"st {}\">{}</td></tr>",
                class(r.outcome),
                r.outcome
            );
        }
        out.push_str("</table>\n");
        if group.len() > 1 {
            out.push_str(&discrimination(protocol, &group));
        }
        out.push_str("</section>\n");
    }
    out
}

fn discrimination(protocol: Protocol, group: &[(usize, &Report)]) -> String {
    let mut out = format!(
        "<h3>{protocol}: discrimination matrix</h3>\n<table class=\"discrimination\">\n<tr><th>sub-probe</th>"
    );
    for (i, r) in group {
        let _ = write!(
            out,
            "<th><a href=\"#r{i}\">{}</a></th>",
            esc(&r.target_name)
        );
    }
    out.push_str("<th>discriminates</th></tr>\n");
    for doc in protocol.docs() {
        let id = doc.id.as_str();
        let statuses: Vec<(Status, &str)> = group
            .iter()
            .map(|(_, r)| {
                r.probe(id)
                    .map_or((Status::Skipped, "not in the report"), |p| {
                        (p.status, p.reason.as_str())
                    })
            })
            .collect();
        let quiet = !statuses.iter().any(|(s, _)| problem(*s));
        let _ = write!(
            out,
            "<tr{}><th title=\"{}\"><code>{}</code></th>",
            if quiet { " class=\"quiet\"" } else { "" },
            esc(doc.title),
            esc(id)
        );
        for ((i, _), (s, why)) in group.iter().zip(&statuses) {
            out.push_str(&cell(*s, &anchor(*i, id), why));
        }
        let only: Vec<Status> = statuses.iter().map(|(s, _)| *s).collect();
        let d = if doc.predicate == Predicate::Control {
            "(control)"
        } else if crate::render::discriminates(&only) {
            "yes"
        } else {
            "no"
        };
        let _ = writeln!(out, "<td>{d}</td></tr>");
    }
    out.push_str("</table>\n");
    out
}

/// Report `i`: its plan, then each predicate with its sub-probes.
fn report_section(i: usize, r: &Report) -> String {
    let protocol = r.plan.protocol();
    let docs = protocol.docs();
    let mut out = format!(
        "<section class=\"report\" id=\"r{i}\">\n<h2>{} <span class=\"st {}\">{}</span></h2>\n\
         <p class=\"meta\">{protocol} at <code>{}</code>; {}; {}; started {} (Unix time)</p>\n",
        esc(&r.target_name),
        class(r.outcome),
        r.outcome,
        esc(&r.plan.index_url),
        esc(crate::render::plan_line(r).trim()),
        esc(&r.tool),
        r.started_unix
    );
    let groups = std::iter::once((Predicate::Control, Predicate::Control.name())).chain(PREDICATES);
    for (pid, name) in groups {
        let records: Vec<&ProbeRecord> = r
            .probes
            .iter()
            .filter(|p| p.id.split('.').next() == Some(pid.as_str()))
            .collect();
        let quiet = !records.iter().any(|p| problem(p.status));
        let _ = write!(
            out,
            "<section class=\"predicate{}\" id=\"{}\">\n<h3>{pid} {name}",
            if quiet { " quiet" } else { "" },
            anchor(i, pid.as_str())
        );
        if let Some(v) = r.predicate(pid) {
            let _ = write!(
                out,
                ": <span class=\"st {}\">{}</span> <span class=\"doc\">{}</span>",
                class(v.status),
                v.status,
                esc(&v.reason)
            );
        }
        out.push_str("</h3>\n");
        for rec in records {
            out.push_str(&probe(i, rec, docs.iter().find(|d| d.id == rec.id)));
        }
        out.push_str("</section>\n");
    }
    out.push_str("</section>\n");
    out
}

fn probe(i: usize, rec: &ProbeRecord, doc: Option<&SubProbeDoc>) -> String {
    let id = anchor(i, &rec.id);
    let mut out = format!(
        "<article class=\"probe {}\" id=\"{}\">\n<p><span class=\"st\">{}</span> <code>{}</code> {}</p>\n<p>{}</p>\n",
        class(rec.status),
        esc(&id),
        rec.status,
        esc(&rec.id),
        esc(doc.map_or("", |d| d.title)),
        esc(&rec.reason)
    );
    if let Some(d) = doc {
        let _ = writeln!(out, "<p class=\"doc\">{}</p>", esc(d.doc));
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} exchange(s); transcript sha256 <span class=\"digest\">{}</span></p>",
        rec.exchanges.len(),
        digests::transcript(rec).to_hex()
    );
    for (n, e) in rec.exchanges.iter().enumerate() {
        out.push_str(&exchange(&format!("{id}-x{n}"), n, e));
    }
    for o in &rec.observations {
        out.push_str(&observation(o));
    }
    out.push_str("</article>\n");
    out
}

/// Up to `max` bytes of `bytes` as text, and how many bytes were left out.
fn shown(bytes: &[u8], max: usize) -> (String, usize) {
    let keep = bytes.get(..max).unwrap_or(bytes);
    (
        String::from_utf8_lossy(keep).into_owned(),
        bytes.len() - keep.len(),
    )
}

fn exchange(id: &str, n: usize, e: &Exchange) -> String {
    let mut out = format!(
        "<details class=\"ex\" id=\"{}\">\n<summary>#{n} {}: {}</summary>\n",
        esc(id),
        esc(&e.label),
        esc(&e.summary())
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">to <code>{}</code> in {} ms; exchange sha256 <span class=\"digest\">{}</span></p>",
        esc(&e.peer),
        e.elapsed_ms,
        digests::exchange(e).to_hex()
    );
    match &e.h2 {
        // The preface and frames are binary: the conversation's summary
        // below says what each stream asked and got.
        Some(_) => {
            let _ = writeln!(
                out,
                "<p>request: {} bytes of HTTP/2 preface and frames (in the report's JSON)</p>",
                e.request.as_bytes().len()
            );
        }
        None => request(&mut out, e.request.as_bytes()),
    }
    if let Some(r) = &e.response {
        out.push_str(&response(r));
    }
    if let Some(c) = &e.h2 {
        let _ = writeln!(
            out,
            "<p>HTTP/2: {} ({} frames)</p>",
            esc(&c.summary()),
            c.frames.len()
        );
    }
    if let Some(a) = &e.after {
        let (text, cut) = shown(a.bytes.as_bytes(), BODY_SHOWN);
        let _ = writeln!(
            out,
            "<p>after the first response ({:?}, {} bytes)</p>\n<pre>{}</pre>",
            a.end,
            a.bytes.as_bytes().len(),
            esc(&text)
        );
        if cut > 0 {
            let _ = writeln!(out, "<p class=\"cut\">{cut} bytes cut</p>");
        }
    }
    if let Some(err) = &e.error {
        let _ = writeln!(out, "<p>error: <code>{}</code></p>", esc(err));
    }
    out.push_str("</details>\n");
    out
}

/// A request's head and body as text, each cut at its limit.
fn request(out: &mut String, request: &[u8]) {
    let head_end = request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(request.len(), |p| p + 4);
    let (head, cut) = shown(request.get(..head_end).unwrap_or(request), HEAD_SHOWN);
    let _ = writeln!(out, "<p>request head</p>\n<pre>{}</pre>", esc(&head));
    if cut > 0 {
        let _ = writeln!(out, "<p class=\"cut\">{cut} more head bytes cut</p>");
    }
    let body_len = request.len() - head_end.min(request.len());
    if body_len > 0 {
        let (body, cut) = shown(request.get(head_end..).unwrap_or_default(), BODY_SHOWN);
        let _ = writeln!(
            out,
            "<p>request body ({body_len} bytes)</p>\n<pre>{}</pre>",
            esc(&body)
        );
        if cut > 0 {
            let _ = writeln!(out, "<p class=\"cut\">{cut} bytes cut</p>");
        }
    }
}

fn response(r: &ResponseRecord) -> String {
    let mut head = r.status_line.clone();
    for (name, value) in &r.headers {
        head.push_str(&format!("\n{name}: {value}"));
    }
    let (body, _) = shown(r.body_prefix.as_bytes(), BODY_SHOWN);
    let shown_len = body_shown_len(r);
    let cut = r.body_len.saturating_sub(shown_len as u64);
    let mut out = format!(
        "<p>response head</p>\n<pre>{}</pre>\n<p>response body: {} bytes, sha256 <span class=\"digest\">{}</span>, reading ended {:?}</p>\n",
        esc(&head),
        r.body_len,
        r.body_sha256.to_hex(),
        r.body_end
    );
    if r.body_len > 0 {
        let _ = writeln!(out, "<pre class=\"body\">{}</pre>", esc(&body));
    }
    if cut > 0 {
        let _ = writeln!(
            out,
            "<p class=\"cut\">{cut} bytes cut (showing {shown_len} of {}; the report records the first {})</p>",
            r.body_len,
            r.body_prefix.as_bytes().len()
        );
    }
    out
}

/// How many body bytes [`response`] shows.
fn body_shown_len(r: &ResponseRecord) -> usize {
    r.body_prefix.as_bytes().len().min(BODY_SHOWN)
}

fn observation(o: &Observation) -> String {
    match o {
        Observation::UpstreamLog { window, requests } => {
            let mut out = format!(
                "<details class=\"ex\">\n<summary>upstream log, {}: {} request(s)</summary>\n<pre>",
                esc(window),
                requests.len()
            );
            for q in requests.iter().take(LOG_SHOWN) {
                let _ = writeln!(
                    out,
                    "{} {} {}{}",
                    q.seq,
                    q.method,
                    esc(&q.target),
                    if q.tripwire { " [tripwire]" } else { "" }
                );
            }
            out.push_str("</pre>\n");
            if requests.len() > LOG_SHOWN {
                let _ = writeln!(
                    out,
                    "<p class=\"cut\">{} more requests cut</p>",
                    requests.len() - LOG_SHOWN
                );
            }
            out.push_str("</details>\n");
            out
        }
        Observation::UpstreamMutation {
            description,
            filename,
            before,
            after,
        } => format!(
            "<p class=\"meta\">upstream changed: {} (<code>{}</code>: {} → {})</p>\n",
            esc(description),
            esc(filename),
            before.as_ref().map_or("absent".to_string(), |d| d.to_hex()),
            after.to_hex()
        ),
        Observation::Input { name, bytes } => format!(
            "<p class=\"meta\">input <code>{}</code>: {} bytes, sha256 <span class=\"digest\">{}</span></p>\n",
            esc(name),
            bytes.as_bytes().len(),
            Sha256Digest::of(bytes.as_bytes()).to_hex()
        ),
        Observation::Alive { exchange: e } => format!(
            "<p class=\"meta\">still serving afterwards: <code>{}</code></p>\n",
            esc(&e.summary())
        ),
    }
}

/// The sandbox scan's checks, each with its paths and evidence lines.
fn scan_section(report: &ScanReport) -> String {
    let mut out = format!(
        "<section class=\"report\" id=\"scan\">\n<h2>sandbox scan: mirror <code>{}</code> <span class=\"st {}\">{}</span></h2>\n\
         <p class=\"meta\">{}; started {} (Unix time); token {}</p>\n",
        esc(&report.plan.mirror),
        class(report.outcome),
        report.outcome,
        esc(&report.tool),
        report.started_unix,
        esc(&report.plan.token)
    );
    for r in &report.records {
        let title = egress_sandbox::checks::check(&r.id).map_or("", |c| c.title);
        let _ = write!(
            out,
            "<article class=\"probe {}\" id=\"scan-{}\">\n<p><span class=\"st\">{}</span> <code>{}</code> {}</p>\n<p>{}</p>\n",
            class(r.status),
            esc(&r.id),
            r.status,
            esc(&r.id),
            esc(title),
            esc(&r.reason)
        );
        for p in &r.paths {
            let _ = writeln!(out, "<p>path out: <code>{}</code></p>", esc(p));
        }
        if !r.evidence.is_empty() {
            let _ = writeln!(
                out,
                "<details class=\"ex\"><summary>{} piece(s) of evidence</summary>\n<pre>",
                r.evidence.len()
            );
            for e in &r.evidence {
                let _ = writeln!(out, "{}", esc(&e.summary()));
            }
            out.push_str("</pre></details>\n");
        }
        out.push_str("</article>\n");
    }
    if !report.notices.is_empty() {
        let _ = writeln!(
            out,
            "<div id=\"scan-notices\"><h3>notices: configured, but leading nowhere from this sandbox (not failures)</h3>\n<ul>"
        );
        for n in &report.notices {
            let _ = writeln!(out, "<li><code>{}</code></li>", esc(&n.line()));
        }
        out.push_str("</ul></div>\n");
    }
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_page_lists_its_notices_after_the_checks() {
        let plan = egress_sandbox::plan(&egress_sandbox::ScanOptions {
            mirror: "http://192.0.2.10:8080/simple/".into(),
            ..Default::default()
        })
        .unwrap();
        let mut records: Vec<egress_sandbox::ScanRecord> = egress_sandbox::checks::CHECKS
            .iter()
            .map(|c| egress_sandbox::ScanRecord {
                id: c.id.into(),
                status: Status::Skipped,
                reason: String::new(),
                paths: vec![],
                evidence: vec![],
            })
            .collect();
        let judged = egress_sandbox::judge_all(&plan, &mut records);
        let report = ScanReport {
            schema: egress_sandbox::SCAN_SCHEMA.into(),
            tool: "t".into(),
            started_unix: 0,
            plan,
            records,
            notices: vec![egress_sandbox::Notice {
                check: "S.apt".into(),
                kind: egress_sandbox::NoticeKind::Unreachable,
                configured: "http://deb.debian.org/<script>".into(),
                place: "/etc/apt/sources.list.d/debian.sources line 1".into(),
                attempt: "name resolution failed".into(),
            }],
            outcome: judged.outcome,
        };
        let page = scan(&report);
        let at = page.find("<div id=\"scan-notices\">").unwrap();
        assert!(at > page.find("id=\"scan-R.mirror-absolute\"").unwrap());
        assert!(page.contains("S.apt /etc/apt/sources.list.d/debian.sources line 1: http://deb.debian.org/&lt;script&gt;: name resolution failed"));
        assert!(!page.contains("<script>\""));
    }

    #[test]
    fn escapes_markup_quotes_and_controls() {
        assert_eq!(
            esc("<script>alert('x')</script>&\"\u{1}\n"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\u{fffd}\n"
        );
    }

    #[test]
    fn the_policy_allows_exactly_the_inline_style_and_script() {
        let html = page("t", true, "<p>x</p>");
        let style_hash = csp_hash(STYLE);
        assert!(html.contains(&format!("style-src {style_hash};")));
        assert!(html.contains(&format!("script-src {};", csp_hash(SCRIPT))));
        assert!(html.contains("default-src 'none'"));
        assert!(!html.contains("unsafe-inline"));
        // The hashed text is exactly what sits between the tags.
        assert!(html.contains(&format!("<style>{STYLE}</style>")));
        assert!(html.contains(&format!("<script>{SCRIPT}</script>")));
        assert!(!html.contains("http://") && !html.contains("https://") && !html.contains(" src="));
    }

    #[test]
    fn an_exchange_shows_heads_and_says_how_much_body_was_cut() {
        use egress_model::evidence::BodyEnd;
        let body = vec![b'a'; 4096];
        let e = Exchange {
            label: "page <b>".into(),
            peer: "127.0.0.1:1".into(),
            request: b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n".to_vec().into(),
            response: Some(ResponseRecord {
                status_line: "HTTP/1.1 200 OK".into(),
                status: Some(200),
                headers: vec![("X-Note".into(), "</pre><script>".into())],
                body_len: 5000,
                body_sha256: Sha256Digest::of(b"whole"),
                body_prefix: body.into(),
                body_end: BodyEnd::CapReached,
            }),
            error: None,
            elapsed_ms: 3,
            after: None,
            h2: None,
        };
        let html = exchange("r0-P1.x-x0", 0, &e);
        assert!(html.contains("<pre>GET /x HTTP/1.1\r\nHost: h\r\n\r\n</pre>"));
        assert!(html.contains("X-Note: &lt;/pre&gt;&lt;script&gt;"));
        assert!(html.contains("page &lt;b&gt;"));
        assert!(html
            .contains("2952 bytes cut (showing 2048 of 5000; the report records the first 4096)"));
        assert!(html.contains(&digests::exchange(&e).to_hex()));
        assert!(html.contains(&"a".repeat(BODY_SHOWN)));
        assert!(!html.contains(&"a".repeat(BODY_SHOWN + 1)));
    }

    #[test]
    fn shown_cuts_at_the_limit_and_counts_the_rest() {
        assert_eq!(shown(b"abcdef", 4), ("abcd".to_string(), 2));
        assert_eq!(shown(b"ab", 4), ("ab".to_string(), 0));
    }
}
