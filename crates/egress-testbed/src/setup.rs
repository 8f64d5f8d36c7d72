//! What the testbed does to a peer over HTTP before the suite runs: create
//! devpi's mirror index, and warm a cache with the lab's projects (PyPI) or
//! packages (npm).

use egress_model::Url;
use egress_transcript::{Client, Request};

fn body_json(ex: &egress_model::Exchange) -> Option<serde_json::Value> {
    let body = ex.response.as_ref()?.full_body()?;
    serde_json::from_slice(body).ok()
}

fn answer(ex: &egress_model::Exchange) -> String {
    match (&ex.response, &ex.error) {
        (Some(r), _) => r.status_line.clone(),
        (None, Some(e)) => e.clone(),
        (None, None) => "no answer".into(),
    }
}

/// Logs in as root (whose password `devpi-init` leaves empty) and creates
/// `user/index` as a mirror index whose upstream is the canary, as devpi's
/// docs do with `devpi index -c NAME type=mirror mirror_url=URL`, through
/// the same HTTP API the `devpi` client uses.
pub fn devpi_mirror(client: &Client, user: &str, index: &str, canary: &str) -> Result<(), String> {
    let login = serde_json::json!({ "user": "root", "password": "" }).to_string();
    let ex = client.send(
        "devpi login",
        &Request::new("POST", "/+login")
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .body(login.into_bytes()),
    );
    let token = body_json(&ex)
        .filter(|_| ex.status() == Some(200))
        .and_then(|v| v["result"]["password"].as_str().map(str::to_string))
        .ok_or_else(|| format!("devpi login as root: {}", answer(&ex)))?;
    let auth = egress_model::base64::encode(format!("root:{token}").as_bytes());
    let spec = serde_json::json!({ "type": "mirror", "mirror_url": canary }).to_string();
    let ex = client.send(
        "devpi create mirror index",
        &Request::new("PUT", &format!("/{user}/{index}"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .header("X-Devpi-Auth", &auth)
            .body(spec.into_bytes()),
    );
    match ex.status() {
        Some(200 | 201) => Ok(()),
        _ => Err(format!("devpi: creating {user}/{index}: {}", answer(&ex))),
    }
}

/// Fetches each project's page and every file it lists through the peer,
/// as a lab warms a cache before cutting it off from its upstream.
pub fn warm(client: &Client, index: &str, projects: &[String]) -> Result<(), String> {
    let base = client.base().clone();
    for project in projects {
        let page_url = base.with_path(&format!("{index}{project}/"));
        let ex = client.get("warm page", page_url.path_and_query(), Some("text/html"));
        let page = ex
            .response
            .as_ref()
            .filter(|r| r.status == Some(200))
            .and_then(|r| r.full_body())
            .and_then(|b| egress_simple::parse_project_html(b).ok())
            .ok_or_else(|| format!("warming: {} answered {}", page_url, answer(&ex)))?;
        for f in &page.files {
            let url: Url = page_url
                .join(&f.url)
                .map_err(|e| format!("warming: {}: {e}", f.filename))?;
            if !url.same_origin(&base) {
                return Err(format!(
                    "warming: {} is served from {}",
                    f.filename,
                    url.origin()
                ));
            }
            let ex = client.get("warm file", url.path_and_query(), None);
            if ex.status() != Some(200) {
                return Err(format!("warming: {} answered {}", f.filename, answer(&ex)));
            }
        }
    }
    Ok(())
}

/// A package's path below an npm registry: `/<name>`, a scoped name's `/`
/// written `%2f`, as npm itself asks for it.
pub fn npm_packument_path(registry_path: &str, name: &str) -> String {
    format!("{registry_path}{}", name.replacen('/', "%2f", 1))
}

/// Fetches each package's packument and every version's tarball through
/// an npm peer, as npm does when it installs them; each tarball must come
/// from the peer itself with the bytes its `dist.integrity` names.
pub fn warm_npm(client: &Client, registry_path: &str, packages: &[String]) -> Result<(), String> {
    let base = client.base().clone();
    for name in packages {
        let path = npm_packument_path(registry_path, name);
        let ex = client.get("warm packument", &path, Some("application/json"));
        let doc = body_json(&ex)
            .filter(|_| ex.status() == Some(200))
            .ok_or_else(|| format!("warming: {path} answered {}", answer(&ex)))?;
        let versions = doc["versions"]
            .as_object()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("warming: {path} lists no versions"))?;
        for (version, meta) in versions {
            let what = format!("{name}@{version}");
            let (Some(tarball), Some(integrity)) = (
                meta["dist"]["tarball"].as_str(),
                meta["dist"]["integrity"].as_str(),
            ) else {
                return Err(format!(
                    "warming: {what} has no dist.tarball and dist.integrity"
                ));
            };
            let url = base
                .join(tarball)
                .map_err(|e| format!("warming: {what}: {tarball}: {e}"))?;
            if !url.same_origin(&base) {
                return Err(format!("warming: {what} is served from {}", url.origin()));
            }
            let ex = client.get("warm tarball", url.path_and_query(), None);
            let bytes = ex
                .response
                .as_ref()
                .filter(|r| r.status == Some(200))
                .and_then(|r| r.full_body())
                .ok_or_else(|| format!("warming: {url} answered {}", answer(&ex)))?;
            let actual = egress_artifacts::sri_sha512(bytes);
            if actual != integrity {
                return Err(format!(
                    "warming: {url}: integrity {actual}, not the {integrity} its packument lists"
                ));
            }
        }
    }
    Ok(())
}
