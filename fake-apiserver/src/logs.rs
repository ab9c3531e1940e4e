//! Containers' logs, served as `pods/<name>/log` as the API server serves them from the
//! kubelet: the options checked as `ValidatePodLogOptions` checks them, the container chosen as
//! the pod registry's `LogLocation` chooses it (`pkg/registry/core/pod/strategy.go`), a pod
//! without a node answering nothing, the container's state checked as the kubelet's
//! `validateContainerLogStatus` checks it (`pkg/kubelet/kubelet_pods.go`), and the lines
//! read as the kubelet's log reader reads them (`pkg/kubelet/kuberuntime/logs`: the last
//! `tailLines` lines, then those since `sinceTime`/`sinceSeconds`, of the streams asked
//! for, each prefixed with its time when `timestamps`, cut after `limitBytes`).
//!
//! There is no kubelet and no container: a test writes what a container prints
//! ([`FakeApiServer::append_pod_log`](crate::FakeApiServer::append_pod_log), `pod_logs.rs`),
//! and the pod's status says, as a kubelet would report it, whether the container runs. Each
//! line keeps the time it was written (the server's clock), for `timestamps` and `since`.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use informer_core::Status;
use serde_json::Value;
use tokio::sync::watch;

use crate::object::{parse_time, rfc3339_nanos};
use crate::status;

/// The most bytes one container's log keeps (its current and previous runs together); the
/// oldest lines go first, as a kubelet's log rotation drops them.
pub const MAX_CONTAINER_LOG_BYTES: usize = 8 << 20;

/// The most containers whose logs are kept; writing a new one beyond drops the logs of pods
/// no longer stored.
const MAX_LOGS: usize = 4096;

/// Which output of a container a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// `PodLogOptions`: the query of a `pods/<name>/log` request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodLogOptions {
    /// The container (none: the pod's only one).
    pub container: Option<String>,
    /// Keep the answer open and send lines as they are written.
    pub follow: bool,
    /// The log of the container's previous run.
    pub previous: bool,
    /// Prefix each line with the time it was written (RFC 3339, nine fractional digits).
    pub timestamps: bool,
    /// Only lines written in the last this many seconds.
    pub since_seconds: Option<i64>,
    /// Only lines written at or after this time (RFC 3339).
    pub since_time: Option<String>,
    /// Only the last this many lines.
    pub tail_lines: Option<i64>,
    /// At most this many bytes (a line may be cut).
    pub limit_bytes: Option<i64>,
    /// `All` (the default), `Stdout` or `Stderr`.
    pub stream: Option<String>,
}

impl PodLogOptions {
    /// The options of a request's query (unknown parameters are ignored, as upstream's
    /// parameter codec ignores them); a value that does not parse is a 400 with Go's error.
    pub fn from_query<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, Status> {
        let mut o = Self::default();
        let int = |v: &str| {
            v.parse::<i64>().map_err(|_| {
                status::bad_request(format!("strconv.ParseInt: parsing {v:?}: invalid syntax"))
            })
        };
        let boolean = |v: &str| match v {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
            _ => Err(status::bad_request(format!(
                "strconv.ParseBool: parsing {v:?}: invalid syntax"
            ))),
        };
        for (key, value) in pairs {
            match key {
                "container" => o.container = Some(value.to_owned()).filter(|c| !c.is_empty()),
                "follow" => o.follow = boolean(value)?,
                "previous" => o.previous = boolean(value)?,
                "timestamps" => o.timestamps = boolean(value)?,
                "sinceSeconds" => o.since_seconds = Some(int(value)?),
                "sinceTime" => {
                    if parse_time(value).is_none() {
                        return Err(status::bad_request(format!(
                            "parsing time {value:?} as \"2006-01-02T15:04:05Z07:00\": cannot \
                             parse {value:?} as \"2006\""
                        )));
                    }
                    o.since_time = Some(value.to_owned());
                }
                "tailLines" => o.tail_lines = Some(int(value)?),
                "limitBytes" => o.limit_bytes = Some(int(value)?),
                "stream" => o.stream = Some(value.to_owned()),
                _ => {}
            }
        }
        Ok(o)
    }

    /// `ValidatePodLogOptions`: a 422 `PodLogOptions "<pod>" is invalid` with each violation.
    pub(crate) fn validate(&self, pod: &str) -> Result<(), Status> {
        let mut errors: Vec<(String, &str, String)> = Vec::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            errors.push((
                "tailLines".into(),
                "FieldValueInvalid",
                format!("{n}: must be greater than or equal to 0"),
            ));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            errors.push((
                "limitBytes".into(),
                "FieldValueInvalid",
                format!("{n}: must be greater than 0"),
            ));
        }
        match (self.since_seconds, &self.since_time) {
            (Some(_), Some(_)) => errors.push((
                String::new(),
                "FieldValueForbidden",
                "at most one of `sinceTime` or `sinceSeconds` may be specified".into(),
            )),
            (Some(n), None) if n < 1 => errors.push((
                "sinceSeconds".into(),
                "FieldValueInvalid",
                format!("{n}: must be greater than 0"),
            )),
            _ => {}
        }
        if let Some(stream) = &self.stream {
            if !["All", "Stdout", "Stderr"].contains(&stream.as_str()) {
                errors.push((
                    "stream".into(),
                    "FieldValueNotSupported",
                    format!("{stream:?}: supported values: \"All\", \"Stderr\", \"Stdout\""),
                ));
            }
            if stream != "All" && self.tail_lines.is_some() {
                errors.push((
                    String::new(),
                    "FieldValueForbidden",
                    "`tailLines` and specific `stream` are mutually exclusive for now".into(),
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(status::invalid("PodLogOptions", "", pod, &errors))
        }
    }

    /// Whether lines of `stream` are asked for.
    fn takes(&self, stream: LogStream) -> bool {
        match self.stream.as_deref() {
            Some("Stdout") => stream == LogStream::Stdout,
            Some("Stderr") => stream == LogStream::Stderr,
            _ => true,
        }
    }

    /// The earliest time asked for, if any, at `now`.
    fn since(&self, now: SystemTime) -> Option<SystemTime> {
        if let Some(seconds) = self.since_seconds {
            let back = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
            return Some(now.checked_sub(back).unwrap_or(UNIX_EPOCH));
        }
        let (secs, nanos) = parse_time(self.since_time.as_deref()?)?;
        let at = Duration::new(u64::try_from(secs).ok()?, u32::try_from(nanos).unwrap_or(0));
        Some(UNIX_EPOCH + at)
    }
}

/// One line a container wrote, with the time and the stream.
#[derive(Debug, Clone)]
struct Line {
    at: SystemTime,
    stream: LogStream,
    /// The text, with its newline unless the container has not finished the line.
    text: String,
}

impl Line {
    fn bytes(&self) -> usize {
        self.text.len()
    }
}

/// A container's log: this run's lines and the previous run's.
#[derive(Debug, Default)]
struct ContainerLog {
    current: Vec<Line>,
    previous: Vec<Line>,
    /// Lines ever appended to `current` (so a follower knows where it is).
    written: u64,
}

impl ContainerLog {
    fn bytes(&self) -> usize {
        self.current
            .iter()
            .chain(&self.previous)
            .map(Line::bytes)
            .sum()
    }

    /// Drops the oldest lines until the log fits its bound.
    fn trim(&mut self) {
        let mut over = self.bytes().saturating_sub(MAX_CONTAINER_LOG_BYTES);
        while over > 0 {
            let line = if self.previous.is_empty() {
                if self.current.is_empty() {
                    return;
                }
                self.current.remove(0)
            } else {
                self.previous.remove(0)
            };
            over = over.saturating_sub(line.bytes());
        }
    }
}

/// Which container's log: the pod's uid (a pod made again under the same name starts with no
/// log) and the container's name.
type Key = (String, String);

/// Every container log, and a signal bumped on every write.
pub(crate) struct PodLogs {
    logs: HashMap<Key, ContainerLog>,
    changed: watch::Sender<u64>,
}

impl Default for PodLogs {
    fn default() -> Self {
        Self {
            logs: HashMap::new(),
            changed: watch::channel(0).0,
        }
    }
}

impl PodLogs {
    /// Appends `text` to the log of `container` of the pod `uid`, line by line (a text that
    /// does not end in a newline leaves its last line open, for the next write to finish),
    /// each line at `at`. When a new log would pass the bound on logs kept, the logs of pods
    /// not among `live()` (the uids of the pods stored) go first.
    pub(crate) fn append(
        &mut self,
        uid: &str,
        container: &str,
        stream: LogStream,
        text: &str,
        at: SystemTime,
        live: impl FnOnce() -> HashSet<String>,
    ) {
        let key = (uid.to_owned(), container.to_owned());
        if !self.logs.contains_key(&key) && self.logs.len() >= MAX_LOGS {
            let live = live();
            self.logs.retain(|(uid, _), _| live.contains(uid));
        }
        let log = self.logs.entry(key).or_default();
        for piece in text.split_inclusive('\n') {
            match log.current.last_mut() {
                Some(last) if !last.text.ends_with('\n') && last.stream == stream => {
                    last.text.push_str(piece);
                }
                _ => {
                    log.current.push(Line {
                        at,
                        stream,
                        text: piece.to_owned(),
                    });
                    log.written += 1;
                }
            }
        }
        log.trim();
        self.changed.send_modify(|n| *n += 1);
    }

    /// The container restarted: its current log becomes the previous one (what
    /// `previous=true` reads), and the new run starts empty.
    pub(crate) fn restart(&mut self, uid: &str, container: &str) {
        let log = self
            .logs
            .entry((uid.to_owned(), container.to_owned()))
            .or_default();
        log.previous = std::mem::take(&mut log.current);
        log.written = 0;
        self.changed.send_modify(|n| *n += 1);
    }

    /// Told whenever a log is written.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The log as `options` ask for it at `now`, and how many lines of the current run were
    /// written so far (where a follower goes on from).
    /// With `finished_only` (a follower's first read), an open last line is left for
    /// [`read_from`](Self::read_from) to send once it is finished.
    pub(crate) fn read(
        &self,
        uid: &str,
        container: &str,
        options: &PodLogOptions,
        now: SystemTime,
        finished_only: bool,
    ) -> (String, u64) {
        let Some(log) = self.logs.get(&(uid.to_owned(), container.to_owned())) else {
            return (String::new(), 0);
        };
        let mut lines = if options.previous {
            &log.previous[..]
        } else {
            &log.current[..]
        };
        let mut written = log.written;
        if finished_only && lines.last().is_some_and(|l| !l.text.ends_with('\n')) {
            lines = &lines[..lines.len() - 1];
            if !options.previous {
                written -= 1;
            }
        }
        let tail = options.tail_lines.map_or(0, |n| {
            lines.len().saturating_sub(usize::try_from(n).unwrap_or(0))
        });
        let text = render(&lines[tail..], options, now);
        (text, written)
    }

    /// The lines of the current run written after the first `from`, as `options` ask for
    /// them (no tail: a follower has read what came before), and the new count.
    pub(crate) fn read_from(
        &self,
        uid: &str,
        container: &str,
        options: &PodLogOptions,
        from: u64,
        now: SystemTime,
    ) -> (String, u64) {
        let Some(log) = self.logs.get(&(uid.to_owned(), container.to_owned())) else {
            return (String::new(), from);
        };
        // A restart or a trim moved the lines: the first of the current run still kept.
        let kept = u64::try_from(log.current.len()).unwrap_or(u64::MAX);
        let first_kept = log.written.saturating_sub(kept);
        let skip = usize::try_from(from.saturating_sub(first_kept)).unwrap_or(usize::MAX);
        let lines = log
            .current
            .get(skip.min(log.current.len())..)
            .unwrap_or(&[]);
        // An open last line is sent when it is finished.
        let complete = lines.iter().take_while(|l| l.text.ends_with('\n')).count();
        let text = render(&lines[..complete], options, now);
        (
            text,
            from.max(first_kept) + u64::try_from(complete).unwrap_or(0),
        )
    }
}

/// `lines` as the kubelet writes them for `options`: those since the time asked for, of the
/// streams asked for, with their times if asked.
fn render(lines: &[Line], options: &PodLogOptions, now: SystemTime) -> String {
    let since = options.since(now);
    let mut out = String::new();
    for line in lines {
        if since.is_some_and(|s| line.at < s) || !options.takes(line.stream) {
            continue;
        }
        if options.timestamps {
            out.push_str(&rfc3339_nanos(line.at));
            out.push(' ');
        }
        out.push_str(&line.text);
    }
    out
}

/// The container a request is for, as the registry's `validateContainer` chooses it: the one
/// named (which the pod must have, among its init, regular and ephemeral containers), or the
/// pod's only container (a 400 naming the choices otherwise).
pub(crate) fn container_of(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, Status> {
    let names = |field: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect()
    };
    let containers = names("containers");
    if let Some(asked) = asked {
        let all = [
            names("initContainers"),
            containers,
            names("ephemeralContainers"),
        ];
        if all.iter().flatten().any(|c| c == asked) {
            return Ok(asked.to_owned());
        }
        return Err(status::bad_request(format!(
            "container {asked} is not valid for pod {name}"
        )));
    }
    match containers.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(status::bad_request(format!(
            "a container name must be specified for pod {name}"
        ))),
        _ => {
            // `VisitContainers` order: init, regular, ephemeral; Go prints `[a b c]`.
            let every: Vec<String> = [
                names("initContainers"),
                containers,
                names("ephemeralContainers"),
            ]
            .concat();
            Err(status::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                every.join(" ")
            )))
        }
    }
}

/// The status of `container` in `pod`'s status (regular, init or ephemeral), as the
/// kubelet looks it up.
fn container_status<'p>(pod: &'p Value, container: &str) -> Option<&'p Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|field| {
        pod.pointer(&format!("/status/{field}"))
            .and_then(Value::as_array)
    })
    .flatten()
    .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
}

/// The kubelet's `validateContainerLogStatus`: whether the container has a log to read (the
/// current run's, or with `previous` the last terminated one's), from the pod's status; its
/// refusals are the 400s the API server relays.
pub(crate) fn check_container_state(
    pod: &Value,
    name: &str,
    container: &str,
    previous: bool,
) -> Result<(), Status> {
    let status = container_status(pod, container);
    let refuse = |what: &str| {
        Err(status::bad_request(format!(
            "container {container:?} in pod {name:?} {what}"
        )))
    };
    let Some(status) = status else {
        return refuse("is not available");
    };
    let set = |pointer: &str| status.pointer(pointer).filter(|v| !v.is_null());
    let id = |pointer: &str| {
        set(pointer)
            .and_then(Value::as_str)
            .is_some_and(|id| !id.is_empty())
    };
    let last_terminated = set("/lastState/terminated");
    if previous {
        if last_terminated.is_none() || !id("/lastState/terminated/containerID") {
            return Err(status::bad_request(format!(
                "previous terminated container {container:?} in pod {name:?} not found"
            )));
        }
        return Ok(());
    }
    if set("/state/running").is_some() {
        return Ok(());
    }
    if set("/state/terminated").is_some() {
        if id("/state/terminated/containerID") || id("/lastState/terminated/containerID") {
            return Ok(());
        }
        return refuse("is terminated");
    }
    if last_terminated.is_some() {
        if id("/lastState/terminated/containerID") {
            return Ok(());
        }
        return refuse("is terminated");
    }
    if let Some(waiting) = set("/state/waiting") {
        let reason = waiting
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return match reason {
            "ErrImagePull" => refuse("is waiting to start: image can't be pulled"),
            "ImagePullBackOff" => refuse("is waiting to start: trying and failing to pull image"),
            reason => refuse(&format!("is waiting to start: {reason}")),
        };
    }
    refuse("is waiting to start - no logs yet")
}

/// Whether the container's current run is over (its state is not `running`): a follower
/// stops there, as the kubelet's does once the container has exited.
pub(crate) fn container_ended(pod: &Value, container: &str) -> bool {
    let running = container_status(pod, container)
        .and_then(|s| s.pointer("/state/running"))
        .is_some_and(|r| !r.is_null());
    !running
}

/// Cuts `text` after `limit` bytes (at a character boundary at or below it).
pub(crate) fn limited(mut text: String, limit: Option<i64>) -> String {
    if let Some(limit) = limit.and_then(|l| usize::try_from(l).ok())
        && text.len() > limit
    {
        let mut at = limit;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::new(1_800_000_000 + secs, 5)
    }

    fn options(query: &[(&str, &str)]) -> PodLogOptions {
        PodLogOptions::from_query(query.iter().copied()).unwrap()
    }

    #[test]
    fn options_parse_and_validate_as_upstream() {
        let o = options(&[
            ("container", "web"),
            ("follow", "true"),
            ("tailLines", "3"),
            ("timestamps", "1"),
            ("other", "x"),
        ]);
        assert_eq!(o.container.as_deref(), Some("web"));
        assert!(o.follow && o.timestamps && !o.previous);
        assert_eq!(o.tail_lines, Some(3));
        let bad = |query: &[(&str, &str)]| {
            PodLogOptions::from_query(query.iter().copied())
                .unwrap_err()
                .message
        };
        assert_eq!(
            bad(&[("tailLines", "x")]),
            "strconv.ParseInt: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            bad(&[("follow", "yes")]),
            "strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
        let invalid = |query: &[(&str, &str)]| options(query).validate("web").unwrap_err();
        let e = invalid(&[("tailLines", "-1"), ("limitBytes", "0")]);
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "PodLogOptions \"web\" is invalid: [tailLines: Invalid value: -1: must be greater \
             than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"
        );
        assert_eq!(
            invalid(&[("sinceSeconds", "5"), ("sinceTime", "2026-01-01T00:00:00Z")]).message,
            "PodLogOptions \"web\" is invalid: : Forbidden: at most one of `sinceTime` or \
             `sinceSeconds` may be specified"
        );
        assert_eq!(
            invalid(&[("stream", "Stdout"), ("tailLines", "2")]).message,
            "PodLogOptions \"web\" is invalid: : Forbidden: `tailLines` and specific `stream` \
             are mutually exclusive for now"
        );
        assert_eq!(
            invalid(&[("stream", "both")]).message,
            "PodLogOptions \"web\" is invalid: stream: Unsupported value: \"both\": supported \
             values: \"All\", \"Stderr\", \"Stdout\""
        );
        assert!(options(&[("sinceSeconds", "10")]).validate("web").is_ok());
    }

    #[test]
    fn lines_are_read_as_the_kubelet_reads_them() {
        let mut logs = PodLogs::default();
        let live = HashSet::new;
        logs.append("u", "c", LogStream::Stdout, "one\ntwo\n", at(0), live);
        logs.append("u", "c", LogStream::Stderr, "oops\n", at(10), live);
        logs.append("u", "c", LogStream::Stdout, "thr", at(20), live);
        logs.append("u", "c", LogStream::Stdout, "ee\n", at(21), live);
        let read = |logs: &PodLogs, query: &[(&str, &str)]| {
            logs.read("u", "c", &options(query), at(30), false).0
        };
        assert_eq!(read(&logs, &[]), "one\ntwo\noops\nthree\n");
        assert_eq!(read(&logs, &[("tailLines", "2")]), "oops\nthree\n");
        assert_eq!(read(&logs, &[("tailLines", "0")]), "");
        assert_eq!(read(&logs, &[("stream", "Stderr")]), "oops\n");
        assert_eq!(read(&logs, &[("stream", "Stdout")]), "one\ntwo\nthree\n");
        assert_eq!(read(&logs, &[("sinceSeconds", "25")]), "oops\nthree\n");
        assert_eq!(
            read(&logs, &[("sinceTime", "2027-01-15T08:00:10Z")]),
            "oops\nthree\n"
        );
        assert_eq!(
            read(&logs, &[("tailLines", "1"), ("timestamps", "true")]),
            "2027-01-15T08:00:20.000000005Z three\n"
        );
        assert_eq!(limited(read(&logs, &[]), Some(6)), "one\ntw");
        assert_eq!(logs.read("u", "other", &options(&[]), at(30), false).0, "");

        // A follower goes on after what it read; an open line waits for its end.
        let (_, seen) = logs.read("u", "c", &options(&[]), at(30), true);
        logs.append("u", "c", LogStream::Stdout, "four\nfi", at(31), live);
        let (more, seen) = logs.read_from("u", "c", &options(&[]), seen, at(32));
        assert_eq!(more, "four\n");
        // One starting while a line is open gets it whole once finished.
        let (first, late) = logs.read("u", "c", &options(&[("tailLines", "1")]), at(32), true);
        assert_eq!((first.as_str(), late), ("four\n", seen));
        assert_eq!(
            logs.read("u", "c", &options(&[("tailLines", "1")]), at(32), false)
                .0,
            "fi"
        );
        logs.append("u", "c", LogStream::Stdout, "ve\n", at(33), live);
        assert_eq!(
            logs.read_from("u", "c", &options(&[]), seen, at(34)).0,
            "five\n"
        );

        // A restart: the old run is `previous`, the new one starts empty.
        logs.restart("u", "c");
        assert_eq!(read(&logs, &[]), "");
        assert_eq!(
            read(&logs, &[("previous", "true")]),
            "one\ntwo\noops\nthree\nfour\nfive\n"
        );
    }

    #[test]
    fn a_log_keeps_its_last_bytes() {
        let mut logs = PodLogs::default();
        let line = "x".repeat(1023) + "\n";
        for i in 0..(MAX_CONTAINER_LOG_BYTES / 1024 + 10) {
            logs.append(
                "u",
                "c",
                LogStream::Stdout,
                &line,
                at(i as u64),
                HashSet::new,
            );
        }
        let (text, written) = logs.read("u", "c", &options(&[]), at(0), false);
        assert_eq!(text.len(), MAX_CONTAINER_LOG_BYTES);
        assert_eq!(written, (MAX_CONTAINER_LOG_BYTES / 1024 + 10) as u64);
        // A follower that fell behind the trimmed lines goes on from the oldest kept.
        let (rest, _) = logs.read_from("u", "c", &options(&[]), 0, at(0));
        assert_eq!(rest.len(), MAX_CONTAINER_LOG_BYTES);
    }

    #[test]
    fn containers_are_chosen_and_checked_as_upstream() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "web"}, {"name": "side"}],
            "ephemeralContainers": [{"name": "debug"}]}});
        assert_eq!(
            container_of(&pod, "p", None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [init web side debug]"
        );
        assert_eq!(container_of(&pod, "p", Some("debug")).unwrap(), "debug");
        assert_eq!(
            container_of(&pod, "p", Some("db")).unwrap_err().message,
            "container db is not valid for pod p"
        );
        let one = json!({"spec": {"containers": [{"name": "web"}]}});
        assert_eq!(container_of(&one, "p", None).unwrap(), "web");

        let with = |state: Value, last: Value| {
            json!({"status": {"containerStatuses": [
                {"name": "web", "state": state, "lastState": last}]}})
        };
        let check = |pod: &Value, previous: bool| {
            check_container_state(pod, "p", "web", previous).map_err(|e| e.message)
        };
        let running = with(json!({"running": {}}), json!({}));
        assert_eq!(check(&running, false), Ok(()));
        assert_eq!(
            check(&running, true),
            Err("previous terminated container \"web\" in pod \"p\" not found".into())
        );
        assert_eq!(
            check(&json!({}), false),
            Err("container \"web\" in pod \"p\" is not available".into())
        );
        assert_eq!(
            check(
                &with(
                    json!({"waiting": {"reason": "ContainerCreating"}}),
                    json!({})
                ),
                false
            ),
            Err("container \"web\" in pod \"p\" is waiting to start: ContainerCreating".into())
        );
        assert_eq!(
            check(
                &with(
                    json!({"waiting": {"reason": "ImagePullBackOff"}}),
                    json!({})
                ),
                false
            ),
            Err(
                "container \"web\" in pod \"p\" is waiting to start: trying and failing to \
                 pull image"
                    .into()
            )
        );
        assert_eq!(
            check(&with(json!({}), json!({})), false),
            Err("container \"web\" in pod \"p\" is waiting to start - no logs yet".into())
        );
        let restarted = with(
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            json!({"terminated": {"exitCode": 1, "containerID": "containerd://1"}}),
        );
        assert_eq!(check(&restarted, false), Ok(()));
        assert_eq!(check(&restarted, true), Ok(()));
        assert_eq!(
            check(
                &with(json!({"terminated": {"exitCode": 0}}), json!({})),
                false
            ),
            Err("container \"web\" in pod \"p\" is terminated".into())
        );
        assert!(container_ended(&restarted, "web"));
        assert!(!container_ended(&running, "web"));
    }
}
