//! The npm proxy's control channel: publish, unpublish, dist-tags, users,
//! login and tokens, all honoured without checking who asks (P6).

use super::{version_keys, Local, State, Token};
use crate::relay::json;
use crate::request_log::lock;
use egress_artifacts::npm_tarball_filename;
use egress_http::Reply;
use serde_json::{json, Value};
use std::sync::Arc;

/// A version string the proxy will store: what can sit in a tarball name.
fn plain_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 256
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.+_".contains(&b))
}

/// 32 random hex digits (from the clock if the OS has no randomness).
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::getrandom(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn bad_request(why: &str) -> Reply {
    json(400, &json!({ "error": why }))
}

impl State {
    fn new_token(&self, readonly: bool) -> (String, String) {
        let token = format!("npm_{}", random_hex());
        let key = random_hex();
        lock(&self.tokens).push(Token {
            token: token.clone(),
            key: key.clone(),
            readonly,
        });
        (token, key)
    }

    /// `PUT /<name>`: npm's publish document; every version in it is stored
    /// with its tarball from `_attachments`, over any version of that number.
    pub(super) fn publish(&self, name: &str, body: &[u8]) -> Reply {
        let Ok(doc) = serde_json::from_slice::<Value>(body) else {
            return bad_request("the publish document is not JSON");
        };
        let Some(versions) = doc["versions"].as_object().filter(|v| !v.is_empty()) else {
            return bad_request("no versions to publish");
        };
        let attachments = doc["_attachments"].as_object();
        let mut stored = Vec::new();
        for (version, manifest) in versions {
            if !plain_version(version) || !manifest.is_object() {
                return bad_request("invalid version");
            }
            let file = npm_tarball_filename(name, version);
            // npm names the attachment `<name>-<version>.tgz`, scope included.
            let attachment = attachments.and_then(|a| {
                a.get(&file)
                    .or_else(|| a.get(&format!("{name}-{version}.tgz")))
                    .or_else(|| (a.len() == 1).then(|| a.values().next()).flatten())
            });
            let Some(bytes) = attachment
                .and_then(|a| a["data"].as_str())
                .and_then(egress_model::base64::decode)
            else {
                return bad_request("no tarball attachment for the version");
            };
            let mut manifest = manifest.clone();
            manifest["version"] = version.clone().into();
            if manifest.get("name").is_none() {
                manifest["name"] = name.into();
            }
            stored.push((version.clone(), manifest, file, Arc::<[u8]>::from(bytes)));
        }
        let mut locals = lock(&self.local);
        let local = locals.entry(name.to_string()).or_default();
        for (version, manifest, file, bytes) in stored {
            local.versions.retain(|(v, _)| *v != version);
            local.versions.push((version.clone(), manifest));
            local.tarballs.insert(file, bytes);
            local.hidden.remove(&version);
        }
        if let Some(tags) = doc["dist-tags"].as_object() {
            for (tag, v) in tags {
                if let Some(v) = v.as_str() {
                    local.tags.insert(tag.clone(), Some(v.to_string()));
                }
            }
        }
        if let Some(d) = doc["description"].as_str() {
            local.description = Some(d.to_string());
        }
        if let Some(r) = doc["readme"].as_str() {
            local.readme = Some(r.to_string());
        }
        local.rev += 1;
        json(201, &json!({"ok": "created new package", "success": true}))
    }

    /// `PUT /<name>/-rev/<rev>`: the document npm writes back to unpublish
    /// one version or move tags. Versions it leaves out are removed (local
    /// ones) or hidden (upstream ones); its dist-tags are taken as they are.
    pub(super) fn change_document(&self, name: &str, raw: &str, body: &[u8]) -> Reply {
        let Ok(doc) = serde_json::from_slice::<Value>(body) else {
            return bad_request("the document is not JSON");
        };
        let Some(keep) = doc["versions"].as_object() else {
            return bad_request("the document has no versions");
        };
        // Which versions upstream has, to hide those left out.
        let target = format!("{}{raw}", self.prefix);
        let ex = self
            .client
            .get("npm proxy: document", &target, Some("application/json"));
        let upstream: Vec<String> = ex
            .response
            .as_ref()
            .filter(|r| r.status == Some(200))
            .and_then(|r| r.full_body())
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .map(|d| version_keys(&d))
            .unwrap_or_default();
        let mut locals = lock(&self.local);
        let local = locals.entry(name.to_string()).or_default();
        let dropped: Vec<String> = local
            .versions
            .iter()
            .map(|(v, _)| v.clone())
            .filter(|v| !keep.contains_key(v))
            .collect();
        for v in &dropped {
            local.versions.retain(|(lv, _)| lv != v);
            local.tarballs.remove(&npm_tarball_filename(name, v));
        }
        for v in upstream.into_iter().filter(|v| !keep.contains_key(v)) {
            local.hidden.insert(v);
        }
        if let Some(tags) = doc["dist-tags"].as_object() {
            for (tag, v) in tags {
                if let Some(v) = v.as_str() {
                    local.tags.insert(tag.clone(), Some(v.to_string()));
                }
            }
        }
        local.rev += 1;
        json(201, &json!({"ok": "package changed", "success": true}))
    }

    /// `DELETE /<name>/-rev/<rev>`: the whole package, local and upstream.
    pub(super) fn unpublish(&self, name: &str) -> Reply {
        let mut locals = lock(&self.local);
        let local = locals.entry(name.to_string()).or_default();
        let rev = local.rev + 1;
        *local = Local {
            hide_all: true,
            rev,
            ..Local::default()
        };
        json(200, &json!({"ok": "package removed", "success": true}))
    }

    /// `DELETE /<name>/-/<file>/-rev/<rev>`: one version's tarball, and the
    /// version with it.
    pub(super) fn unpublish_file(&self, name: &str, file: &str) -> Reply {
        let version = super::file_version(name, file).map(str::to_string);
        let mut locals = lock(&self.local);
        let local = locals.entry(name.to_string()).or_default();
        local.tarballs.remove(file);
        if let Some(v) = version {
            local.versions.retain(|(lv, _)| *lv != v);
            local.hidden.insert(v);
        }
        local.rev += 1;
        json(200, &json!({"ok": "tarball removed", "success": true}))
    }

    /// `PUT /-/package/<name>/dist-tags/<tag>` with a JSON string version.
    pub(super) fn set_tag(&self, name: &str, tag: &str, body: &[u8]) -> Reply {
        let Ok(Value::String(version)) = serde_json::from_slice::<Value>(body) else {
            return bad_request("the body must be a JSON string");
        };
        let mut locals = lock(&self.local);
        let local = locals.entry(name.to_string()).or_default();
        local.tags.insert(tag.to_string(), Some(version));
        local.rev += 1;
        json(201, &json!({"ok": "package tagged", "success": true}))
    }

    /// `DELETE /-/package/<name>/dist-tags/<tag>`.
    pub(super) fn remove_tag(&self, name: &str, tag: &str) -> Reply {
        let mut locals = lock(&self.local);
        let local = locals.entry(name.to_string()).or_default();
        local.tags.insert(tag.to_string(), None);
        local.rev += 1;
        json(200, &json!({"ok": "tag removed", "success": true}))
    }

    /// `PUT /-/user/org.couchdb.user:<name>`: every user is created, with a
    /// token, whatever the body says.
    pub(super) fn add_user(&self, user: &str) -> Reply {
        let (token, _) = self.new_token(false);
        json(
            201,
            &json!({
                "ok": true,
                "id": format!("org.couchdb.user:{user}"),
                "token": token,
            }),
        )
    }

    /// `POST /-/v1/login`: a web login whose `doneUrl` answers with a token
    /// at once: nobody has to log in at `loginUrl`.
    pub(super) fn web_login(&self, req: &egress_http::Request) -> Reply {
        let origin = self.client_origin(req);
        let id = random_hex();
        json(
            200,
            &json!({
                "loginUrl": format!("{origin}/-/v1/login/cli/{id}"),
                "doneUrl": format!("{origin}/-/v1/done/{id}"),
            }),
        )
    }

    /// `GET /-/v1/done/<id>`: the login "completed".
    pub(super) fn login_done(&self) -> Reply {
        let (token, _) = self.new_token(false);
        json(200, &json!({ "token": token }))
    }

    /// `GET /-/npm/v1/tokens`.
    pub(super) fn list_tokens(&self) -> Reply {
        let objects: Vec<Value> = lock(&self.tokens)
            .iter()
            .map(|t| {
                json!({
                    "token": format!("{}...", t.token.get(..10).unwrap_or_default()),
                    "key": t.key,
                    "cidr_whitelist": null,
                    "readonly": t.readonly,
                    "automation": false,
                    "created": "2025-01-01T00:00:00.000Z",
                    "updated": "2025-01-01T00:00:00.000Z",
                })
            })
            .collect();
        let total = objects.len();
        json(
            200,
            &json!({"objects": objects, "total": total, "urls": {}}),
        )
    }

    /// `POST /-/npm/v1/tokens`: a new token, whatever password is given.
    pub(super) fn create_token(&self, body: &[u8]) -> Reply {
        let readonly = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|d| d["readonly"].as_bool())
            .unwrap_or(false);
        let (token, key) = self.new_token(readonly);
        json(
            200,
            &json!({
                "token": token,
                "key": key,
                "cidr_whitelist": [],
                "readonly": readonly,
                "automation": false,
                "created": "2025-01-01T00:00:00.000Z",
                "updated": "2025-01-01T00:00:00.000Z",
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_tokens() {
        assert!(plain_version("1.0.0-beta.1+build"));
        assert!(!plain_version("../x") && !plain_version("") && !plain_version("1 0"));
        let a = random_hex();
        assert_eq!(a.len(), 32);
        assert_ne!(a, random_hex());
    }
}
