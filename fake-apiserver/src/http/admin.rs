//! The admin API under `/_fake/`: the engine's controls and faults as JSON over HTTP. The
//! table of endpoints is in the module documentation of [`crate::http`].

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use informer_core::Status;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::app::App;
use super::response::{json_value, status_response};
use crate::seed::{self, Churn, ChurnConfig, SeedConfig};
use crate::{DEFAULT_HISTORY_MAX_BYTES, HistoryConfig, RawLine, ResourceDef, Scope, status};

/// The endpoint table, served at `GET /_fake/`.
pub(crate) const TABLE: &str = include_str!("admin_api.md");

/// A `Status` answer.
#[derive(Debug)]
struct AdminError(Status);

impl From<Status> for AdminError {
    fn from(s: Status) -> Self {
        Self(s)
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        status_response(&self.0)
    }
}

type Answer = Result<Response, AdminError>;

fn ok(value: Value) -> Answer {
    Ok(json_value(StatusCode::OK, &value))
}

fn parse<T: DeserializeOwned + Default>(body: &Bytes) -> Result<T, AdminError> {
    if body.iter().all(u8::is_ascii_whitespace) || body.trim_ascii() == b"null" {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        AdminError(status::bad_request(format!(
            "invalid admin request body: {e}"
        )))
    })
}

/// The admin routes (mounted under `/_fake`).
pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/", get(index))
        .route("/state", get(state))
        .route("/compact", post(compact))
        .route("/resource-version", post(resource_version))
        .route("/history", put(history))
        .route("/bookmarks", post(bookmarks))
        .route("/bookmark-interval", put(bookmark_interval))
        .route("/sharded-list-and-watch", put(sharded_list_and_watch))
        .route("/faults", get(pending_faults).delete(clear_faults))
        .route("/faults/fail-lists", post(fail_lists))
        .route("/faults/fail-watches", post(fail_watches))
        .route("/faults/fail-writes", post(fail_writes))
        .route("/faults/drop-watches", post(drop_watches))
        .route("/faults/break-watches", post(break_watches))
        .route("/faults/drop-next-watch-after", post(drop_next_watch_after))
        .route("/faults/delay-lists", put(delay_lists))
        .route("/faults/delay-watch-events", put(delay_watch_events))
        .route("/faults/inject-error", post(inject_error))
        .route("/faults/expire-watches", post(expire_watches))
        .route(
            "/faults/expire-continue-tokens",
            post(expire_continue_tokens),
        )
        .route("/faults/expire-next-continues", post(expire_next_continues))
        .route(
            "/faults/ignore-send-initial-events",
            put(ignore_send_initial_events),
        )
        .route("/faults/inject-raw-line", post(inject_raw_line))
        .route("/requests", get(requests).delete(clear_requests))
        .route("/seed", post(seed_objects))
        .route(
            "/churn",
            post(start_churn).get(churn_stats).delete(stop_churn),
        )
        .route("/resources", post(register))
        .route("/pod-logs", post(append_pod_log))
        .route("/pod-logs/restart", post(restart_pod_log))
        .route("/exec", put(set_exec_rules))
        .route("/service-routes", put(route_service))
        .fallback(|| async {
            AdminError(Status::failure(
                404,
                "NotFound",
                "no such admin endpoint (GET /_fake/ lists them)",
            ))
        })
}

pub(crate) async fn index() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        TABLE,
    )
        .into_response()
}

fn scope(resource: Option<&str>) -> Scope {
    Scope::from(resource.unwrap_or("*"))
}

async fn state(State(app): State<App>) -> Answer {
    let server = &app.server;
    let resources: Vec<Value> = server
        .resources()
        .iter()
        .map(|def| {
            let name = def.qualified_name();
            json!({
                "group": def.group,
                "version": def.version,
                "plural": def.plural,
                "kind": def.kind,
                "namespaced": def.namespaced,
                "objects": server.objects(&name, None).map(|o| o.len()).unwrap_or(0),
                "oldestResourceVersion": server.oldest_resource_version(&name).ok(),
                "openWatches": server.open_watches(name.as_str()),
            })
        })
        .collect();
    let pending: Vec<String> = server
        .faults()
        .pending()
        .iter()
        .map(ToString::to_string)
        .collect();
    ok(json!({
        "resourceVersion": server.resource_version(),
        "compactedResourceVersion": server.compacted_resource_version(),
        "historyBytes": server.history_bytes(),
        "openWatches": server.open_watches(Scope::All),
        "shardedListAndWatch": server.sharded_list_and_watch(),
        "resources": resources,
        "pendingFaults": pending,
    }))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CompactBody {
    resource_version: Option<u64>,
}

async fn compact(State(app): State<App>, body: Bytes) -> Answer {
    let b: CompactBody = parse(&body)?;
    let to = match b.resource_version {
        Some(rv) => {
            app.server.compact(rv)?;
            rv
        }
        None => app.server.compact_all(),
    };
    ok(json!({"compactedTo": to}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RvBody {
    next: Option<u64>,
    advance_by: Option<u64>,
}

async fn resource_version(State(app): State<App>, body: Bytes) -> Answer {
    let b: RvBody = parse(&body)?;
    let current = app.server.resource_version();
    let next = match (b.next, b.advance_by) {
        (Some(n), None) => n,
        (None, Some(by)) => current
            .checked_add(by)
            .and_then(|rv| rv.checked_add(1))
            .ok_or_else(|| {
                status::bad_request(format!(
                    "advanceBy {by} from {current} leaves no room for a write (the largest \
                     resourceVersion is {})",
                    crate::MAX_RESOURCE_VERSION
                ))
            })?,
        _ => {
            return Err(
                status::bad_request("give exactly one of \"next\" and \"advanceBy\"").into(),
            );
        }
    };
    app.server.set_next_resource_version(next)?;
    ok(json!({"resourceVersion": app.server.resource_version(), "next": next}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HistoryBody {
    min_events: Option<usize>,
    max_events: Option<usize>,
    min_age_seconds: Option<f64>,
    max_bytes: Option<usize>,
}

async fn history(State(app): State<App>, body: Bytes) -> Answer {
    let b: HistoryBody = parse(&body)?;
    let d = HistoryConfig::default();
    let min_age = match b.min_age_seconds {
        Some(s) => duration(s)?,
        None => d.min_age,
    };
    app.server.set_history(HistoryConfig {
        min_events: b.min_events.unwrap_or(d.min_events),
        max_events: b.max_events.unwrap_or(d.max_events),
        min_age,
    });
    app.server
        .set_history_max_bytes(b.max_bytes.unwrap_or(DEFAULT_HISTORY_MAX_BYTES));
    ok(json!({}))
}

fn duration(seconds: f64) -> Result<Duration, AdminError> {
    Duration::try_from_secs_f64(seconds).map_err(|e| {
        AdminError(status::bad_request(format!(
            "invalid duration {seconds}: {e}"
        )))
    })
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResourceBody {
    resource: Option<String>,
}

async fn bookmarks(State(app): State<App>, body: Bytes) -> Answer {
    let b: ResourceBody = parse(&body)?;
    let n = app.server.send_bookmark(scope(b.resource.as_deref()));
    ok(json!({"watchers": n}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IntervalBody {
    seconds: f64,
}

async fn bookmark_interval(State(app): State<App>, body: Bytes) -> Answer {
    let b: IntervalBody = parse(&body)?;
    app.server.set_bookmark_interval(duration(b.seconds)?);
    ok(json!({}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EnabledBody {
    enabled: bool,
}

async fn sharded_list_and_watch(State(app): State<App>, body: Bytes) -> Answer {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(status::bad_request("give {\"enabled\": true} or {\"enabled\": false}").into());
    }
    let b: EnabledBody = parse(&body)?;
    app.server.set_sharded_list_and_watch(b.enabled);
    ok(json!({ "enabled": b.enabled }))
}

async fn pending_faults(State(app): State<App>) -> Answer {
    let pending: Vec<String> = app
        .server
        .faults()
        .pending()
        .iter()
        .map(ToString::to_string)
        .collect();
    ok(json!({"pending": pending}))
}

async fn clear_faults(State(app): State<App>) -> Answer {
    app.server.faults().clear();
    ok(json!({}))
}

/// A status as the admin API accepts it: a shorthand or a full `Status` object.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StatusSpec {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    code: u16,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    retry_after_seconds: Option<u32>,
}

/// Turns a `status` field into a Status: a full `Status` object as given, or a shorthand
/// completed with the server's canned status for its code.
fn to_status(value: Option<&Value>, current_rv: u64) -> Result<Status, AdminError> {
    let value = value.ok_or_else(|| AdminError(status::bad_request("\"status\" is required")))?;
    let spec: StatusSpec = serde_json::from_value(value.clone())
        .map_err(|e| AdminError(status::bad_request(format!("invalid status: {e}"))))?;
    if spec.kind.as_deref() == Some("Status") {
        return serde_json::from_value(value.clone())
            .map_err(|e| AdminError(status::bad_request(format!("invalid Status: {e}"))));
    }
    let mut s = match spec.code {
        429 => status::too_many_requests(spec.retry_after_seconds.unwrap_or(1)),
        410 => status::expired(status::LIST_EXPIRED_MESSAGE),
        500 => status::internal_error("injected by the fake API server"),
        504 => status::resource_version_too_large(current_rv.saturating_add(1), current_rv),
        404 => status::resource_not_found(),
        400 => status::bad_request("injected by the fake API server"),
        c if (400..600).contains(&c) => Status::failure(c, "", "injected by the fake API server"),
        c => {
            return Err(AdminError(status::bad_request(format!(
                "status code {c} is not an error code (400..599)"
            ))));
        }
    };
    if let Some(r) = spec.reason {
        s.reason = r;
    }
    if let Some(m) = spec.message {
        s.message = m;
    }
    if let Some(secs) = spec.retry_after_seconds {
        s.details
            .get_or_insert_with(Default::default)
            .retry_after_seconds = Some(secs);
    }
    Ok(s)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FailBody {
    resource: Option<String>,
    #[serde(default = "one")]
    count: usize,
    status: Option<Value>,
}

fn one() -> usize {
    1
}

async fn fail_lists(State(app): State<App>, body: Bytes) -> Answer {
    let b: FailBody = parse(&body)?;
    let s = to_status(b.status.as_ref(), app.server.resource_version())?;
    app.server
        .faults()
        .fail_lists(scope(b.resource.as_deref()), b.count, s);
    ok(json!({}))
}

async fn fail_watches(State(app): State<App>, body: Bytes) -> Answer {
    let b: FailBody = parse(&body)?;
    let s = to_status(b.status.as_ref(), app.server.resource_version())?;
    app.server
        .faults()
        .fail_watches(scope(b.resource.as_deref()), b.count, s);
    ok(json!({}))
}

async fn fail_writes(State(app): State<App>, body: Bytes) -> Answer {
    let b: FailBody = parse(&body)?;
    let s = to_status(b.status.as_ref(), app.server.resource_version())?;
    app.server
        .faults()
        .fail_writes(scope(b.resource.as_deref()), b.count, s);
    ok(json!({}))
}

async fn drop_watches(State(app): State<App>, body: Bytes) -> Answer {
    let b: ResourceBody = parse(&body)?;
    let n = app
        .server
        .faults()
        .drop_watches(scope(b.resource.as_deref()));
    ok(json!({"watches": n}))
}

async fn break_watches(State(app): State<App>, body: Bytes) -> Answer {
    let b: ResourceBody = parse(&body)?;
    let n = app
        .server
        .faults()
        .break_watches(scope(b.resource.as_deref()));
    ok(json!({"watches": n}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DropAfterBody {
    resource: Option<String>,
    events: usize,
}

async fn drop_next_watch_after(State(app): State<App>, body: Bytes) -> Answer {
    let b: DropAfterBody = parse(&body)?;
    app.server
        .faults()
        .drop_next_watch_after(scope(b.resource.as_deref()), b.events);
    ok(json!({}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DelayBody {
    resource: Option<String>,
    millis: Option<u64>,
}

async fn delay_lists(State(app): State<App>, body: Bytes) -> Answer {
    let b: DelayBody = parse(&body)?;
    app.server.faults().delay_lists(
        scope(b.resource.as_deref()),
        b.millis.map(Duration::from_millis),
    );
    ok(json!({}))
}

async fn delay_watch_events(State(app): State<App>, body: Bytes) -> Answer {
    let b: DelayBody = parse(&body)?;
    app.server.faults().delay_watch_events(
        scope(b.resource.as_deref()),
        b.millis.map(Duration::from_millis),
    );
    ok(json!({}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InjectErrorBody {
    resource: Option<String>,
    status: Option<Value>,
}

async fn inject_error(State(app): State<App>, body: Bytes) -> Answer {
    let b: InjectErrorBody = parse(&body)?;
    let s = to_status(b.status.as_ref(), app.server.resource_version())?;
    let n = app
        .server
        .faults()
        .inject_error(scope(b.resource.as_deref()), s);
    ok(json!({"watches": n}))
}

async fn expire_watches(State(app): State<App>, body: Bytes) -> Answer {
    let b: ResourceBody = parse(&body)?;
    let n = app
        .server
        .faults()
        .expire_watches(scope(b.resource.as_deref()));
    ok(json!({"watches": n}))
}

async fn expire_continue_tokens(State(app): State<App>) -> Answer {
    app.server.faults().expire_continue_tokens();
    ok(json!({}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CountBody {
    resource: Option<String>,
    #[serde(default = "one")]
    count: usize,
}

async fn expire_next_continues(State(app): State<App>, body: Bytes) -> Answer {
    let b: CountBody = parse(&body)?;
    app.server
        .faults()
        .expire_next_continues(scope(b.resource.as_deref()), b.count);
    ok(json!({}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IgnoreBody {
    resource: Option<String>,
    #[serde(default = "yes")]
    ignore: bool,
}

fn yes() -> bool {
    true
}

async fn ignore_send_initial_events(State(app): State<App>, body: Bytes) -> Answer {
    let b: IgnoreBody = parse(&body)?;
    app.server
        .faults()
        .ignore_send_initial_events(scope(b.resource.as_deref()), b.ignore);
    ok(json!({}))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawLineBody {
    resource: Option<String>,
    line: Option<String>,
    preset: Option<String>,
}

async fn inject_raw_line(State(app): State<App>, body: Bytes) -> Answer {
    let b: RawLineBody = parse(&body)?;
    let line = match (b.line, b.preset.as_deref()) {
        (Some(l), None) => Bytes::from(l),
        (None, Some("garbage")) => RawLine::garbage(),
        (None, Some("unknown-event-type")) => RawLine::unknown_event_type(),
        (None, Some("object-without-metadata")) => RawLine::object_without_metadata(),
        _ => {
            return Err(status::bad_request(
                "give exactly one of \"line\" and \"preset\" (garbage, unknown-event-type, \
                 object-without-metadata)",
            )
            .into());
        }
    };
    let n = app
        .server
        .faults()
        .inject_raw_line(scope(b.resource.as_deref()), line);
    ok(json!({"watches": n}))
}

async fn requests(State(app): State<App>, RawQuery(query): RawQuery) -> Answer {
    let clear = query
        .as_deref()
        .is_some_and(|q| q.split('&').any(|p| p == "clear=true" || p == "clear=1"));
    let records = if clear {
        app.server.take_requests()
    } else {
        app.server.requests()
    };
    let list: Vec<Value> = records
        .iter()
        .map(|r| {
            json!({
                "method": r.method,
                "path": r.path,
                "query": r.query,
                "url": r.url(),
            })
        })
        .collect();
    ok(json!({"requests": list}))
}

async fn clear_requests(State(app): State<App>) -> Answer {
    app.server.clear_requests();
    ok(json!({}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SeedBody {
    #[serde(default = "one")]
    namespaces: usize,
    #[serde(default)]
    pods: usize,
    #[serde(default)]
    configmaps: usize,
    #[serde(default = "default_seed")]
    seed: u64,
}

impl Default for SeedBody {
    fn default() -> Self {
        Self {
            namespaces: 1,
            pods: 0,
            configmaps: 0,
            seed: 1,
        }
    }
}

fn default_seed() -> u64 {
    1
}

async fn seed_objects(State(app): State<App>, body: Bytes) -> Answer {
    let b: SeedBody = parse(&body)?;
    let config = SeedConfig {
        namespaces: b.namespaces,
        pods: b.pods,
        configmaps: b.configmaps,
        seed: b.seed,
    };
    let server = app.server.clone();
    let report = tokio::task::spawn_blocking(move || seed::seed(&server, &config))
        .await
        .map_err(|e| AdminError(status::internal_error(&format!("seeding panicked: {e}"))))??;
    ok(json!({
        "namespaces": report.namespaces,
        "pods": report.pods,
        "configmaps": report.configmaps,
        "resourceVersion": report.resource_version,
    }))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ChurnBody {
    rate_per_second: Option<f64>,
    seed: Option<u64>,
    namespaces: Option<Vec<String>>,
    resources: Option<Vec<String>>,
    weights: Option<(u32, u32, u32)>,
}

async fn start_churn(State(app): State<App>, body: Bytes) -> Answer {
    let b: ChurnBody = parse(&body)?;
    let d = ChurnConfig::default();
    let rate = b.rate_per_second.unwrap_or(d.rate_per_second);
    if !(rate.is_finite() && rate > 0.0) {
        return Err(status::bad_request(format!("invalid ratePerSecond {rate}")).into());
    }
    let config = ChurnConfig {
        rate_per_second: rate,
        seed: b.seed.unwrap_or(d.seed),
        namespaces: b.namespaces.unwrap_or(d.namespaces),
        resources: b.resources.unwrap_or(d.resources),
        weights: b.weights.unwrap_or(d.weights),
    };
    let previous = app
        .churn
        .lock()
        .replace(Churn::start(app.server.clone(), config));
    if let Some(p) = previous {
        p.stop().await;
    }
    ok(json!({}))
}

fn churn_json(running: bool, stats: seed::ChurnStats) -> Value {
    json!({
        "running": running,
        "creates": stats.creates,
        "updates": stats.updates,
        "deletes": stats.deletes,
        "errors": stats.errors,
        "skipped": stats.skipped,
    })
}

async fn churn_stats(State(app): State<App>) -> Answer {
    let guard = app.churn.lock();
    let value = match guard.as_ref() {
        Some(c) => churn_json(true, c.stats()),
        None => churn_json(false, seed::ChurnStats::default()),
    };
    drop(guard);
    ok(value)
}

async fn stop_churn(State(app): State<App>) -> Answer {
    let running = app.churn.lock().take();
    let stats = match running {
        Some(c) => c.stop().await,
        None => seed::ChurnStats::default(),
    };
    ok(churn_json(false, stats))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RegisterBody {
    #[serde(default)]
    group: String,
    version: String,
    plural: String,
    kind: String,
    #[serde(default = "yes")]
    namespaced: bool,
    singular: Option<String>,
    list_kind: Option<String>,
    #[serde(default)]
    short_names: Vec<String>,
}

async fn register(State(app): State<App>, body: Bytes) -> Answer {
    let b: RegisterBody = parse(&body)?;
    if b.version.is_empty() || b.plural.is_empty() || b.kind.is_empty() {
        return Err(
            status::bad_request("\"version\", \"plural\" and \"kind\" are required").into(),
        );
    }
    let mut def = if b.namespaced {
        ResourceDef::namespaced(&b.group, &b.version, &b.plural, &b.kind)
    } else {
        ResourceDef::cluster_scoped(&b.group, &b.version, &b.plural, &b.kind)
    };
    if let Some(s) = b.singular {
        def.singular = s;
    }
    if let Some(l) = b.list_kind {
        def.list_kind = l;
    }
    def.short_names = b.short_names;
    app.server.register(def)?;
    Ok(json_value(StatusCode::CREATED, &json!({})))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct PodLogBody {
    namespace: String,
    pod: String,
    container: String,
    stream: Option<String>,
    text: String,
}

impl PodLogBody {
    fn stream(&self) -> Result<crate::LogStream, Status> {
        match self.stream.as_deref() {
            None | Some("stdout" | "Stdout") => Ok(crate::LogStream::Stdout),
            Some("stderr" | "Stderr") => Ok(crate::LogStream::Stderr),
            Some(other) => Err(status::bad_request(format!(
                "\"stream\" must be \"stdout\" or \"stderr\", not {other:?}"
            ))),
        }
    }
}

async fn append_pod_log(State(app): State<App>, body: Bytes) -> Answer {
    let b: PodLogBody = parse(&body)?;
    let stream = b.stream()?;
    app.server
        .append_pod_log(&b.namespace, &b.pod, &b.container, stream, &b.text)?;
    Ok(json_value(StatusCode::OK, &json!({})))
}

async fn restart_pod_log(State(app): State<App>, body: Bytes) -> Answer {
    let b: PodLogBody = parse(&body)?;
    app.server
        .restart_pod_log(&b.namespace, &b.pod, &b.container)?;
    Ok(json_value(StatusCode::OK, &json!({})))
}

/// One scripted answer of `PUT /_fake/exec`: the commands it matches (every field given
/// must equal the request's) and what they print and exit with.
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct ExecRule {
    namespace: Option<String>,
    pod: Option<String>,
    container: Option<String>,
    command: Option<Vec<String>>,
    stdout: String,
    stderr: String,
    exit_code: i32,
    /// Print the standard input (after `stdout`).
    echo_stdin: bool,
}

impl ExecRule {
    fn matches(&self, r: &crate::ExecRequest) -> bool {
        let same = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        same(&self.namespace, &r.namespace)
            && same(&self.pod, &r.pod)
            && same(&self.container, &r.container)
            && self.command.as_ref().is_none_or(|c| *c == r.command)
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct ExecRulesBody {
    rules: Vec<ExecRule>,
}

async fn set_exec_rules(State(app): State<App>, body: Bytes) -> Answer {
    let b: ExecRulesBody = parse(&body)?;
    let rules = b.rules;
    let count = rules.len();
    app.server.set_exec_handler(move |request| {
        let Some(rule) = rules.iter().find(|rule| rule.matches(request)) else {
            return crate::ExecOutput {
                stderr: format!(
                    "fake-apiserver: no exec rule matches [{}] (PUT /_fake/exec)\n",
                    request.command.join(" ")
                )
                .into_bytes(),
                exit_code: 127,
                ..crate::ExecOutput::default()
            };
        };
        let mut stdout = rule.stdout.clone().into_bytes();
        if rule.echo_stdin {
            stdout.extend_from_slice(&request.stdin);
        }
        crate::ExecOutput {
            stdout,
            stderr: rule.stderr.clone().into_bytes(),
            exit_code: rule.exit_code,
        }
    });
    Ok(json_value(StatusCode::OK, &json!({"rules": count})))
}

/// `PUT /_fake/service-routes`: where calls to a service's port go.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceRouteBody {
    namespace: String,
    name: String,
    port: u16,
    address: String,
}

async fn route_service(State(app): State<App>, body: Bytes) -> Answer {
    let b: ServiceRouteBody = parse(&body)?;
    if b.namespace.is_empty() || b.name.is_empty() || b.port == 0 || b.address.is_empty() {
        return Err(AdminError(status::bad_request(
            "a route names the service's namespace, name and port, and the address to dial",
        )));
    }
    app.server
        .route_service(&b.namespace, &b.name, b.port, b.address.clone());
    Ok(json_value(
        StatusCode::OK,
        &json!({"namespace": b.namespace, "name": b.name, "port": b.port, "address": b.address}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_shorthands() {
        let s = to_status(Some(&json!({"code": 429, "retryAfterSeconds": 3})), 5).unwrap();
        assert_eq!((s.code, s.reason.as_str()), (429, "TooManyRequests"));
        assert_eq!(s.retry_after(), Some(Duration::from_secs(3)));
        let s = to_status(Some(&json!({"code": 504})), 5).unwrap();
        assert_eq!(
            s.class(),
            informer_core::ErrorClass::ResourceVersionTooLarge
        );
        let s = to_status(
            Some(&json!({"code": 503, "reason": "ServiceUnavailable", "message": "x"})),
            5,
        )
        .unwrap();
        assert_eq!(
            (s.code, s.reason.as_str(), s.message.as_str()),
            (503, "ServiceUnavailable", "x")
        );
        let full = json!({"kind": "Status", "status": "Failure", "code": 410, "reason": "Gone", "message": "gone"});
        assert_eq!(to_status(Some(&full), 5).unwrap().reason, "Gone");
        assert!(to_status(Some(&json!({"code": 200})), 5).is_err());
        assert!(to_status(None, 5).is_err());
    }

    #[test]
    fn the_table_names_every_route() {
        for path in [
            "/_fake/state",
            "/_fake/compact",
            "/_fake/resource-version",
            "/_fake/history",
            "/_fake/bookmarks",
            "/_fake/bookmark-interval",
            "/_fake/faults/fail-lists",
            "/_fake/faults/inject-raw-line",
            "/_fake/requests",
            "/_fake/seed",
            "/_fake/churn",
            "/_fake/resources",
            "/_fake/pod-logs",
            "/_fake/pod-logs/restart",
            "/_fake/exec",
            "/_fake/service-routes",
        ] {
            assert!(
                TABLE.contains(&format!("`{path}`")),
                "{path} is not documented"
            );
        }
    }
}
