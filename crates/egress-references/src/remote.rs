//! A standalone canary driven over HTTP through its control API (see
//! [`crate::control`]): the [`Upstream`] that `check --canary` hands the
//! suite, so that a deployed mirror is checked with every sub-probe the
//! testbed runs.
//!
//! The control exchanges are never part of a report (they carry the
//! secret). `mark` and `requests_since` cannot return an error through
//! [`Upstream`]; when one fails, the failure is kept and
//! [`RemoteCanary::failure`] names it, and the caller must discard the run:
//! an unread log must never read as "no contact".

use crate::control::{Secret, CONTROL_PREFIX};
use egress_model::{
    Observation, ProjectName, Upstream, UpstreamError, UpstreamPlan, UpstreamRequest, Url,
};
use egress_transcript::{Client, Method, Request};
use serde::de::DeserializeOwned;
use std::sync::Mutex;
use std::time::Duration;

/// A standalone canary's control API.
pub struct RemoteCanary {
    link: Link,
    plan: UpstreamPlan,
    failure: Mutex<Option<UpstreamError>>,
}

/// How the control API is reached.
struct Link {
    client: Client,
    control: Url,
    authorization: String,
}

impl RemoteCanary {
    /// Reaches the canary at `url` (its origin; a path is ignored), reads
    /// its plan and its log's end. Fails when the control API does not
    /// answer, refuses the secret, or answers with anything but its
    /// documents.
    pub fn connect(url: &Url, secret: &Secret, timeout: Duration) -> Result<Self, UpstreamError> {
        let control = url.with_path(CONTROL_PREFIX);
        let limits = egress_transcript::Limits {
            deadline: timeout,
            max_body_bytes: 256 * 1024 * 1024,
            record_bytes: 256 * 1024 * 1024,
            ..Default::default()
        };
        let client =
            Client::new(control.clone(), limits, None).map_err(|e| UpstreamError::Control {
                url: control.to_string(),
                reason: e.to_string(),
            })?;
        let link = Link {
            client,
            control,
            authorization: secret.header_value(),
        };
        let plan: UpstreamPlan = link.call(Method::Get, "plan", None)?;
        Url::parse(&plan.origin).map_err(|e| link.error(format!("the plan's origin: {e}")))?;
        let _: Mark = link.call(Method::Get, "mark", None)?;
        Ok(Self {
            link,
            plan,
            failure: Mutex::new(None),
        })
    }

    /// The protocol the canary speaks, from its plan's index URL: a PyPI
    /// canary's is its `/simple/`; an apt canary's, its archive root
    /// ([`crate::apt::canary::ARCHIVE`]); a cargo canary's, its sparse
    /// index (`/index/`); a Hub canary's plan names its repositories
    /// (`hf`); an npm canary's, its root.
    pub fn protocol(&self) -> egress_suite::Protocol {
        let index = &self.plan.index_url;
        if self.plan.hf.is_some() {
            egress_suite::Protocol::Hf
        } else if index.ends_with("/simple/") {
            egress_suite::Protocol::Pypi
        } else if index.ends_with("/index/") {
            egress_suite::Protocol::Cargo
        } else if index.ends_with(&format!("{}/", crate::apt::canary::ARCHIVE)) {
            egress_suite::Protocol::Apt
        } else {
            egress_suite::Protocol::Npm
        }
    }

    /// The first failure of `mark` or `requests_since`, if any: the run's
    /// upstream evidence is then incomplete and must not be judged.
    pub fn failure(&self) -> Option<UpstreamError> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn remember(&self, e: UpstreamError) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(e);
        }
    }
}

impl Link {
    fn error(&self, reason: String) -> UpstreamError {
        UpstreamError::Control {
            url: self.control.to_string(),
            reason,
        }
    }

    /// One control request; a `422` carries the canary's [`UpstreamError`].
    fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        route: &str,
        body: Option<serde_json::Value>,
    ) -> Result<T, UpstreamError> {
        let target = format!("{CONTROL_PREFIX}{route}");
        let mut req = Request::new(method.clone(), &target)
            .header("Authorization", &self.authorization)
            .header("Accept", "application/json");
        if let Some(b) = body {
            req = req
                .header("Content-Type", "application/json")
                .body(b.to_string().into_bytes());
        }
        let ex = self.client.send("canary control", &req);
        let Some(resp) = ex.response.as_ref() else {
            return Err(self.error(ex.error.unwrap_or_else(|| "no answer".into())));
        };
        let status = resp.status.unwrap_or(0);
        let Some(bytes) = resp.full_body() else {
            return Err(self.error(format!("answer {status} with an incomplete body")));
        };
        if status == 422 {
            #[derive(serde::Deserialize)]
            struct Refusal {
                error: UpstreamError,
            }
            return match serde_json::from_slice::<Refusal>(bytes) {
                Ok(r) => Err(r.error),
                Err(e) => Err(self.error(format!("answer 422 that is not a refusal: {e}"))),
            };
        }
        if status != 200 {
            return Err(self.error(format!(
                "{method} {route} answered {status}, not 200 (is the secret the canary's, and the URL the canary's?)"
            )));
        }
        serde_json::from_slice(bytes).map_err(|e| {
            self.error(format!(
                "{method} {route}: not the control API's answer: {e}"
            ))
        })
    }
}

#[derive(serde::Deserialize)]
struct Mark {
    mark: u64,
}

#[derive(serde::Deserialize)]
struct Requests {
    requests: Vec<UpstreamRequest>,
}

impl Upstream for RemoteCanary {
    fn plan(&self) -> UpstreamPlan {
        self.plan.clone()
    }

    fn mark(&self) -> u64 {
        match self.link.call::<Mark>(Method::Get, "mark", None) {
            Ok(m) => m.mark,
            Err(e) => {
                self.remember(e);
                0
            }
        }
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        let got = self
            .link
            .call::<Requests>(Method::Get, &format!("requests?since={mark}"), None);
        match got {
            Ok(r) if r.requests.iter().all(|u| u.seq > mark) => r.requests,
            Ok(_) => {
                self.remember(self.link.error(format!(
                    "requests?since={mark} returned entries from before the mark"
                )));
                Vec::new()
            }
            Err(e) => {
                self.remember(e);
                Vec::new()
            }
        }
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError> {
        self.link.call(
            Method::Post,
            "publish",
            Some(serde_json::json!({ "project": project.as_str() })),
        )
    }

    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError> {
        self.link.call(
            Method::Post,
            "replace",
            Some(serde_json::json!({ "filename": filename })),
        )
    }

    fn move_tag(
        &self,
        project: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        self.link.call(
            Method::Post,
            "move-tag",
            Some(serde_json::json!({ "project": project, "tag": tag, "version": version })),
        )
    }

    fn yank(&self, project: &str, version: &str) -> Result<Observation, UpstreamError> {
        self.link.call(
            Method::Post,
            "yank",
            Some(serde_json::json!({ "project": project, "version": version })),
        )
    }
}
