//! BENCHMARKS.md: the tables of absolute figures with ratios against kube-runtime and the
//! floor, the targets marked met or missed, the setup, and the hand-written analysis included
//! verbatim.

use std::fmt::Write as _;

use crate::contender::ContenderKind;
use crate::machine::Machine;
use crate::protocol::ColdLookups;
use crate::suite::{ContenderResult, SizeResults, SuiteResults};

/// What the report says besides the results.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportContext {
    /// The machine.
    pub machine: Machine,
    /// When (`YYYY-MM-DD HH:MM UTC`).
    pub date: String,
    /// The command that produced it.
    pub command: String,
    /// The hand-maintained analysis (`benchmarks/ANALYSIS.md`), included verbatim.
    pub analysis: Option<String>,
}

/// Whether a target's measure must stay below or above its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// measured ≤ limit.
    AtMost,
    /// measured ≥ limit.
    AtLeast,
}

/// What a target's measure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A ratio (shown `1.23×`).
    Ratio,
    /// Microseconds (shown `850 µs`, `12.3 ms`).
    Micros,
}

/// One target, checked at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetCheck {
    /// What is aimed for.
    pub target: &'static str,
    /// At how many pods.
    pub pods: usize,
    /// The measured ratio or value (`None` when a contender it needs did not run).
    pub measured: Option<f64>,
    /// The limit.
    pub limit: f64,
    /// Which side of the limit is good.
    pub bound: Bound,
    /// What `measured` and `limit` are.
    pub unit: Unit,
    /// The figures the ratio comes from.
    pub detail: String,
}

impl TargetCheck {
    /// `Some(true)` met, `Some(false)` missed, `None` not measured.
    pub fn met(&self) -> Option<bool> {
        let m = self.measured.filter(|m| m.is_finite())?;
        Some(match self.bound {
            Bound::AtMost => m <= self.limit,
            Bound::AtLeast => m >= self.limit,
        })
    }
}

/// A measured ratio and the figures it comes from.
type Measure = (Option<f64>, String);

/// `f` of two contenders' results, when both ran.
fn compare(
    a: Option<&ContenderResult>,
    b: Option<&ContenderResult>,
    f: impl Fn(&ContenderResult, &ContenderResult) -> Measure,
) -> Measure {
    match (a, b) {
        (Some(a), Some(b)) => f(a, b),
        _ => (None, "not measured".to_owned()),
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (a.is_finite() && b.is_finite() && b > 0.0).then(|| a / b)
}

/// The targets of issue 7, checked for the headline contender (informer-rs default) at one
/// size, then those of issue 15 (the compact store; CPU per watch event).
pub fn targets(size: &SizeResults) -> Vec<TargetCheck> {
    let mut checks = headline_targets(size);
    checks.extend(compact_targets(size));
    checks
}

/// The targets of issue 7.
fn headline_targets(size: &SizeResults) -> Vec<TargetCheck> {
    let ours = size.of(ContenderKind::Informer);
    let kr = size.of(ContenderKind::KubeRuntime);
    let floor = size.of(ContenderKind::Floor);
    let pods = size.pods;
    let sync = compare(ours, floor, |o, f| {
        (
            ratio(o.sync(), f.sync()),
            format!("{} vs floor {}", secs(o.sync()), secs(f.sync())),
        )
    });
    let rss = compare(ours, kr, |o, k| {
        (
            ratio(o.rss(), k.rss()),
            format!("{} vs kube-runtime {}", mib(o.rss()), mib(k.rss())),
        )
    });
    let relist = match ours {
        Some(o) => (
            ratio(o.relist.peak as f64, o.relist.rss_before as f64),
            format!(
                "peak {} vs {} after sync",
                mib(o.relist.peak as f64),
                mib(o.relist.rss_before as f64)
            ),
        ),
        None => (None, "not measured".to_owned()),
    };
    let watch = compare(ours, kr, |o, k| {
        let complete = o.steady.received == o.steady.written;
        (
            ratio(o.burst.applied_rate(), k.burst.applied_rate())
                .map(|r| if complete { r } else { 0.0 }),
            format!(
                "backlog drained at {} vs {}; steady phase: {} of {} events",
                rate(o.burst.applied_rate()),
                rate(k.burst.applied_rate()),
                o.steady.received,
                o.steady.written
            ),
        )
    });
    let lookup = compare(ours, kr, |o, k| match (&o.lookups, &k.lookups) {
        (Some(ol), Some(kl)) => (
            ratio(kl.namespace.nanos_per_op, ol.namespace.nanos_per_op),
            format!(
                "{} vs a scan {} (speed-up)",
                nanos(ol.namespace.nanos_per_op),
                nanos(kl.namespace.nanos_per_op)
            ),
        ),
        _ => (None, "not measured".to_owned()),
    });
    let check = |target, (measured, detail): Measure, limit, bound| TargetCheck {
        target,
        pods,
        measured,
        limit,
        bound,
        unit: Unit::Ratio,
        detail,
    };
    let mut checks = vec![
        check("cold sync ≤ 1.2× the floor", sync, 1.2, Bound::AtMost),
        check(
            "RSS after sync ≤ 0.8× kube-runtime's",
            rss,
            0.8,
            Bound::AtMost,
        ),
        check(
            "relist peak ≤ 1.3× own RSS after sync",
            relist,
            1.3,
            Bound::AtMost,
        ),
        check(
            "watch throughput ≥ kube-runtime's",
            watch,
            1.0,
            Bound::AtLeast,
        ),
    ];
    // The issue sets this target at 100k pods: with fewer pods a scan is short, and the
    // lookups table still shows the speed-up.
    if pods >= LOOKUP_TARGET_PODS {
        checks.push(check(
            "namespace lookup ≥ 100× faster than kube-runtime's scan",
            lookup,
            100.0,
            Bound::AtLeast,
        ));
    }
    checks
}

/// The smallest size the namespace lookup target applies to.
pub const LOOKUP_TARGET_PODS: usize = 100_000;

/// The targets of issue 15: the compact store's memory, relist peak, cold sync and cold
/// lookups, and the default store's CPU per watch event against the floor's.
fn compact_targets(size: &SizeResults) -> Vec<TargetCheck> {
    let ours = size.of(ContenderKind::Informer);
    let compact = size.of(ContenderKind::InformerCompact);
    let kr = size.of(ContenderKind::KubeRuntime);
    let floor = size.of(ContenderKind::Floor);
    let pods = size.pods;
    let check = |target, (measured, detail): Measure, limit, bound, unit| TargetCheck {
        target,
        pods,
        measured,
        limit,
        bound,
        unit,
        detail,
    };
    let rss = compare(compact, kr, |c, k| {
        (
            ratio(c.rss(), k.rss()),
            format!("{} vs kube-runtime {}", mib(c.rss()), mib(k.rss())),
        )
    });
    let relist = match compact {
        Some(c) => (
            ratio(c.relist.peak as f64, c.relist.rss_before as f64),
            format!(
                "peak {} vs {} after sync",
                mib(c.relist.peak as f64),
                mib(c.relist.rss_before as f64)
            ),
        ),
        None => (None, "not measured".to_owned()),
    };
    let sync = compare(compact, floor, |c, f| {
        (
            ratio(c.sync(), f.sync()),
            format!("{} vs floor {}", secs(c.sync()), secs(f.sync())),
        )
    });
    let cold = |pick: fn(&ColdLookups) -> f64, what: &str| -> Measure {
        let value = |c: Option<&ContenderResult>| {
            c.and_then(|c| c.lookups)
                .and_then(|l| l.cold)
                .map(|cold| pick(&cold))
        };
        match value(compact) {
            Some(v) => (
                Some(v),
                format!(
                    "{what} {}; default store {}",
                    micros(v),
                    value(ours).map_or_else(|| "–".to_owned(), micros)
                ),
            ),
            None => (None, "not measured".to_owned()),
        }
    };
    let cpu = compare(ours, floor, |o, f| {
        (
            ratio(
                o.steady.cpu_micros_per_event(),
                f.steady.cpu_micros_per_event(),
            ),
            format!(
                "{} vs floor {} (steady phase)",
                micros(o.steady.cpu_micros_per_event()),
                micros(f.steady.cpu_micros_per_event())
            ),
        )
    });
    vec![
        check(
            "compact store: RSS after sync ≤ 0.2× kube-runtime's",
            rss,
            0.2,
            Bound::AtMost,
            Unit::Ratio,
        ),
        check(
            "compact store: relist peak ≤ 1.2× own RSS after sync",
            relist,
            1.2,
            Bound::AtMost,
            Unit::Ratio,
        ),
        check(
            "compact store: cold sync ≤ 1.1× the floor",
            sync,
            1.1,
            Bound::AtMost,
            Unit::Ratio,
        ),
        check(
            "compact store: get by namespace/name, cold key, p50 ≤ 20 µs",
            cold(|c| c.get.p50, "p50"),
            20.0,
            Bound::AtMost,
            Unit::Micros,
        ),
        check(
            "compact store: get by namespace/name, cold key, p99 ≤ 100 µs",
            cold(|c| c.get.p99, "p99"),
            100.0,
            Bound::AtMost,
            Unit::Micros,
        ),
        check(
            "compact store: pods of one namespace (1,000 at 100k), median ≤ 20 ms",
            cold(|c| c.namespace.p50, "median over namespaces"),
            20_000.0,
            Bound::AtMost,
            Unit::Micros,
        ),
        check(
            "CPU per watch event ≤ 1.3× the floor's",
            cpu,
            1.3,
            Bound::AtMost,
            Unit::Ratio,
        ),
    ]
}

/// `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mib(bytes: f64) -> String {
    if !bytes.is_finite() {
        return "–".into();
    }
    let m = bytes / 1_048_576.0;
    if m >= 100.0 {
        format!("{} MiB", thousands(m.round() as u64))
    } else {
        format!("{m:.1} MiB")
    }
}

fn secs(s: f64) -> String {
    if !s.is_finite() {
        "–".into()
    } else if s >= 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.2} s")
    }
}

fn micros(us: f64) -> String {
    if !us.is_finite() {
        "–".into()
    } else if us >= 10_000.0 {
        format!("{:.1} ms", us / 1_000.0)
    } else if us >= 1_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn nanos(ns: f64) -> String {
    if !ns.is_finite() || ns <= 0.0 {
        "–".into()
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn rate(per_second: f64) -> String {
    if per_second.is_finite() && per_second > 0.0 {
        format!("{}/s", thousands(per_second.round() as u64))
    } else {
        "–".into()
    }
}

fn times(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() && r >= 100.0 => format!("{}×", thousands(r.round() as u64)),
        Some(r) if r.is_finite() && r >= 10.0 => format!("{r:.0}×"),
        Some(r) if r.is_finite() => format!("{r:.2}×"),
        _ => "–".into(),
    }
}

fn verdict(check: &TargetCheck) -> &'static str {
    match check.met() {
        Some(true) => "**met**",
        Some(false) => "**missed**",
        None => "not measured",
    }
}

/// A target's value in its unit.
/// `measured` as the report shows it (`1.23×`, `52 µs`, `30.3 ms`; `–` when not measured).
pub fn value_text(unit: Unit, value: Option<f64>) -> String {
    match unit {
        Unit::Ratio => times(value),
        Unit::Micros => value.map_or_else(|| "–".to_owned(), micros),
    }
}

fn limit_text(check: &TargetCheck) -> String {
    let limit = value_text(check.unit, Some(check.limit));
    match check.bound {
        Bound::AtMost => format!("≤ {limit}"),
        Bound::AtLeast => format!("≥ {limit}"),
    }
}

/// The whole BENCHMARKS.md.
pub fn render(results: &SuiteResults, context: &ReportContext) -> String {
    let mut out = String::new();
    let s = &results.settings;
    let m = &context.machine;
    let _ = writeln!(
        out,
        "# Benchmarks: informer-rs side by side with kube-runtime\n"
    );
    let _ = writeln!(
        out,
        "<!-- Generated by the benchmark harness (benchmarks/, `cargo xtask bench`). Do not edit: \
         rerun it. The analysis at the end comes verbatim from benchmarks/ANALYSIS.md. -->\n"
    );
    let _ = writeln!(out, "- Command: `{}`", context.command);
    let _ = writeln!(out, "- Date: {}", context.date);
    let _ = writeln!(
        out,
        "- Machine: {} ({} cores), {} RAM, Linux {}, {}",
        m.cpu,
        m.cores,
        mib(m.memory_bytes as f64),
        m.kernel,
        m.rustc
    );
    let sizes: Vec<String> = results
        .sizes
        .iter()
        .map(|z| thousands(z.pods as u64))
        .collect();
    let _ = writeln!(
        out,
        "- Data: {} realistic pods (about 6 KB of JSON each, five `managedFields` entries) over {} \
         namespaces, seeded into the `fake-apiserver` binary (release build) running as its own \
         process, one fresh server per size.",
        sizes.join(" and "),
        s.namespaces
    );
    out.push('\n');
    out.push_str(&SETUP.replace("{allocator}", &context.machine.allocator));
    let _ = writeln!(
        out,
        "\nPhases in this run: steady writes at {} for {} s; a backlog of {} writes; lookups timed \
         for at least {} s each over {} keys and every namespace; {} s settle pauses before memory \
         reads.\n",
        rate(s.steady_rate),
        s.steady_seconds,
        thousands(s.burst),
        s.lookup_seconds,
        thousands(s.lookup_keys as u64),
        s.settle_seconds
    );

    let _ = writeln!(out, "## Targets\n");
    let _ = writeln!(
        out,
        "Headline contender: informer-rs with its defaults (`KubeInformerFactory`, full objects); \
         the rows starting \"compact store\" are its compact-store contender (issue 15). Why a \
         target is missed, and what would close it, is in the analysis below.\n"
    );
    let _ = writeln!(out, "| target | pods | measured | aim | result | from |");
    let _ = writeln!(out, "|---|---:|---:|---:|---|---|");
    for size in &results.sizes {
        for t in targets(size) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                t.target,
                thousands(t.pods as u64),
                value_text(t.unit, t.measured),
                limit_text(&t),
                verdict(&t),
                t.detail
            );
        }
    }
    out.push('\n');

    for size in &results.sizes {
        render_size(&mut out, size);
    }

    if let Some(analysis) = &context.analysis {
        out.push_str("---\n\n");
        out.push_str(analysis.trim_end());
        out.push('\n');
    }
    out
}

fn render_size(out: &mut String, size: &SizeResults) {
    let kr = size.of(ContenderKind::KubeRuntime);
    let floor = size.of(ContenderKind::Floor);
    let vs =
        |f: &dyn Fn(&ContenderResult) -> f64,
         c: &ContenderResult,
         base: Option<&ContenderResult>| { times(base.and_then(|b| ratio(f(c), f(b)))) };
    let _ = writeln!(out, "## {} pods\n", thousands(size.pods as u64));
    let server_rss = size
        .server_rss
        .map_or_else(String::new, |b| format!("; server RSS {}", mib(b as f64)));
    let _ = writeln!(
        out,
        "Server seeded in {}{server_rss}. Ratios are this contender's figure divided by \
         kube-runtime's (default config) and by the floor's.\n",
        secs(size.seed_seconds)
    );

    let _ = writeln!(out, "### Cold sync\n");
    let _ = writeln!(
        out,
        "| contender | time to synced (median) | runs | × kube-runtime | × floor | peak RSS during sync |"
    );
    let _ = writeln!(out, "|---|---:|---|---:|---:|---:|");
    for c in &size.contenders {
        let runs: Vec<String> = c.sync_seconds.iter().map(|s| format!("{s:.2}")).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            c.kind.label(),
            secs(c.sync()),
            runs.join(", "),
            vs(&ContenderResult::sync, c, kr),
            vs(&ContenderResult::sync, c, floor),
            mib(c.sync_peak())
        );
    }

    let _ = writeln!(out, "\n### Memory\n");
    let _ = writeln!(
        out,
        "| contender | RSS after sync (median) | per pod | × kube-runtime | relist peak | peak ÷ own RSS after sync | peak × kube-runtime's | relist time | RSS after relist | server saw |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for c in &size.contenders {
        let per_pod = (c.rss() - c.rss_idle as f64) / size.pods.max(1) as f64 / 1024.0;
        let peak = |c: &ContenderResult| c.relist.peak as f64;
        let seen = if c.relist.streaming_requests > 0 {
            format!("{} streaming list", c.relist.streaming_requests)
        } else {
            format!("{} list requests", c.relist.list_requests)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} KiB | {} | {}{} | {} | {} | {} | {} | {} |",
            c.kind.label(),
            mib(c.rss()),
            per_pod,
            vs(&ContenderResult::rss, c, kr),
            mib(peak(c)),
            if c.relist.peak_from_hwm {
                ""
            } else {
                " (sampled)"
            },
            times(ratio(peak(c), c.relist.rss_before as f64)),
            vs(&peak, c, kr),
            secs(c.relist.seconds),
            mib(c.relist.rss_after as f64),
            seen
        );
    }

    let _ = writeln!(out, "\n### Watch\n");
    let _ = writeln!(
        out,
        "| contender | steady: events applied | applied/s | latency p50 | p90 | p99 | max | CPU per event | backlog drained at | × kube-runtime | × floor | CPU per event |"
    );
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let drain = |c: &ContenderResult| c.burst.applied_rate();
    for c in &size.contenders {
        let l = &c.steady.latency_micros;
        let _ = writeln!(
            out,
            "| {} | {} of {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.kind.label(),
            thousands(c.steady.received),
            thousands(c.steady.written),
            rate(c.steady.applied_rate()),
            micros(l.p50),
            micros(l.p90),
            micros(l.p99),
            micros(l.max),
            micros(c.steady.cpu_micros_per_event()),
            rate(drain(c)),
            vs(&drain, c, kr),
            vs(&drain, c, floor),
            micros(c.burst.cpu_micros_per_event())
        );
    }
    if let Some(c) = size.contenders.first() {
        let _ = writeln!(
            out,
            "\nSteady writes were sent at {} (offered {}); latency is from the writer's timestamp \
             (taken as the PATCH leaves) to the handler (informer-rs), the stream consumer after \
             the store update (kube-runtime) or the decoded event (floor). The backlog: {} writes \
             made while the contender was stopped (SIGSTOP), then drained after SIGCONT; the rate \
             is events from first to last handled.",
            rate(c.steady.write_rate),
            rate(c.steady.offered_rate.unwrap_or(0.0)),
            thousands(c.burst.written)
        );
    }

    let _ = writeln!(out, "\n### Lookups\n");
    let _ = writeln!(
        out,
        "| contender | pods of 1 namespace (of {}) | speed-up vs kube-runtime | get by namespace/name | × kube-runtime |",
        size.contenders
            .iter()
            .find_map(|c| c.lookups.map(|l| l.namespace.found_per_pass))
            .map_or_else(|| "–".to_owned(), thousands)
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    let ns = |c: &ContenderResult| c.lookups.map_or(f64::NAN, |l| l.namespace.nanos_per_op);
    let get = |c: &ContenderResult| c.lookups.map_or(f64::NAN, |l| l.get.nanos_per_op);
    for c in size.contenders.iter().filter(|c| c.lookups.is_some()) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            c.kind.label(),
            nanos(ns(c)),
            times(kr.and_then(|k| ratio(ns(k), ns(c)))),
            nanos(get(c)),
            vs(&get, c, kr)
        );
    }

    let cold: Vec<(&ContenderResult, ColdLookups)> = size
        .contenders
        .iter()
        .filter_map(|c| Some((c, c.lookups?.cold?)))
        .collect();
    if !cold.is_empty() {
        let _ = writeln!(
            out,
            "\nThe loops above repeat the same inputs, so a cache of decoded objects serves most \
             of them. Cold lookups, each input once and each call timed on its own, before those \
             loops: {} keys none of the phases touched last (where the size allows: with fewer \
             pods than writes every pod was written, and the compact store's cache may still \
             hold a few), and every namespace once.\n",
            thousands(cold.iter().map(|(_, c)| c.get.count).max().unwrap_or(0))
        );
        let _ = writeln!(
            out,
            "| contender | get, cold: p50 | p90 | p99 | max | pods of 1 namespace, each once: median | p90 | max |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for (c, l) in cold {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                c.kind.label(),
                micros_fine(l.get.p50),
                micros_fine(l.get.p90),
                micros_fine(l.get.p99),
                micros_fine(l.get.max),
                micros_fine(l.namespace.p50),
                micros_fine(l.namespace.p90),
                micros_fine(l.namespace.max)
            );
        }
    }
    out.push('\n');
}

/// Microseconds, below one as nanoseconds.
fn micros_fine(us: f64) -> String {
    if us.is_finite() && us < 1.0 {
        nanos(us * 1_000.0)
    } else {
        micros(us)
    }
}

/// How the run is set up (the same for every run but the allocator, which replaces
/// `{allocator}`).
const SETUP: &str = "\
How it is measured (benchmarks/src, `informer-benchmarks`):

- **Processes.** The orchestrator (`informer-bench`) starts the server, seeds it through the \
`/_fake/` admin API, stamps every pod the writes will touch once (so every contender lists \
identical objects), then runs each contender in fresh `bench-contender` processes, one after \
another: a *memory run* (cold sync, RSS after sync, forced relist) and a *watch run* (cold sync \
again, steady writes, backlog, lookups). RSS is `VmRSS`/`VmHWM` from `/proc/<pid>/status`; \
`VmHWM` is reset (`clear_refs`) before the relist and `VmRSS` is also sampled every 5 ms.
- **Same conditions.** One tokio multi-thread runtime with 2 workers per contender, {allocator} \
for all, the same kube-client `Client` configuration for all \
(`informer_kube::client_for_informers`: kube-client's retry layer for 429/503/504 off; no such \
answer occurs here, so the layer would only add the same small overhead to everyone), page size \
500 for all, typed k8s-openapi `Pod`s for all. Before every run the orchestrator writes and \
frees 64 KiB of memory per pod, so that each contender starts on memory the machine has used \
lately: on a virtual machine, memory the guest has not touched lately costs host page faults \
too, and without this the cold sync of whichever contender followed a small process took twice \
as long. The server has also answered one full list both ways before the first run.
- **informer-rs (default).** `KubeInformerFactory::new(client).informer::<Pod>()`: DeltaFifo, \
indexed store with the namespace index, one closure handler. Its lists, the first and those \
after a 410, are streaming lists (a watch with `sendInitialEvents=true`, the informer's default), \
which the server answers from its history as the API server's watch cache does. The extra row \
drops `managedFields` as each object is decoded (`set_drop_managed_fields(true)`); it is not the \
headline.
- **informer-rs, compact store.** The same factory with `set_store(StoreKind::Compact(\
CompactOptions::default()))`: every pod kept as its JSON, compressed with a zstd dictionary \
trained on the first 512, a cache of 1,024 decoded pods; objects arrive with their JSON text, \
which the store compresses as received (no re-encoding); full objects (`managedFields` kept). \
Since the store takes lists as text, it gets paginated lists instead of streaming ones (the \
default `WatchListMode::Auto` settles so; `CompactOptions::takes_lists_as_text`; runs before \
2026-11-26 19:20 UTC streamed).
- **kube-runtime 5.** `reflector(writer, watcher(api, watcher::Config::default()).default_backoff())` \
consumed by one task (its documented use), and the same with `.streaming_lists()`. Its default \
lists are consistent (no resourceVersion) in pages of 500. Namespace lookups use \
`Store::state_filter`, the scan it offers (cheaper than `state()` then a filter).
- **Floor.** kube-client `Api::list` pages (limit 500) and `Api::watch`, every object decoded \
into `Pod` and dropped, a new list after a 410: the least any cache costs.
- **Forced relist.** A config map is written (the resourceVersion moves past the contender's), \
the history is compacted, the pod watches are ended; the re-watch gets 410 and the contender \
lists again. The harness checks the contender saw the 410 and the server logged the new list.
- **Watch.** The writer (in the orchestrator) sends JSON merge patches of pods stamped with a \
sequence number and the send time (`CLOCK_REALTIME`); the contender's handler computes now − \
stamp. Periodic bookmarks are off so that the compaction above always forces a 410.
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::LookupTiming;
    use crate::stats::Summary;
    use crate::suite::{LookupsResult, RelistResult, Settings, WatchResult};

    fn watch(received: u64, span: f64, cpu: f64) -> WatchResult {
        WatchResult {
            offered_rate: Some(100.0),
            written: received,
            write_rate: 100.0,
            received,
            span_seconds: span,
            latency_micros: Summary {
                count: received,
                p50: 500.0,
                p90: 900.0,
                p99: 2_000.0,
                max: 30_000.0,
                mean: 600.0,
            },
            cpu_seconds: cpu,
        }
    }

    fn result(
        kind: ContenderKind,
        sync: f64,
        rss: u64,
        peak: u64,
        drain_span: f64,
        ns: f64,
    ) -> ContenderResult {
        ContenderResult {
            kind,
            rss_idle: 10 << 20,
            sync_seconds: vec![sync, sync + 0.2],
            sync_peak: vec![peak, peak],
            rss_after_sync: vec![rss, rss],
            relist: RelistResult {
                rss_before: rss,
                peak,
                peak_from_hwm: true,
                seconds: 1.0,
                rss_after: rss,
                list_requests: 20,
                streaming_requests: 0,
            },
            steady: watch(1_000, 1.0, 0.1),
            burst: watch(10_001, drain_span, 0.5),
            lookups: kind.has_cache().then_some(LookupsResult {
                namespace: LookupTiming {
                    operations: 100,
                    nanos_per_op: ns,
                    found_per_pass: 10_000,
                },
                get: LookupTiming {
                    operations: 1_000,
                    nanos_per_op: 100.0,
                    found_per_pass: 1_000,
                },
                cold: None,
            }),
        }
    }

    fn sample() -> SuiteResults {
        SuiteResults {
            settings: Settings {
                namespaces: 100,
                page_size: 500,
                steady_rate: 1_000.0,
                steady_seconds: 1.0,
                burst: 10_001,
                lookup_seconds: 0.1,
                lookup_keys: 1_000,
                settle_seconds: 0.5,
            },
            sizes: vec![SizeResults {
                pods: 10_000,
                seed_seconds: 3.0,
                server_rss: Some(300 << 20),
                contenders: vec![
                    result(
                        ContenderKind::Informer,
                        1.1,
                        700 << 20,
                        900 << 20,
                        1.0,
                        1_000.0,
                    ),
                    result(
                        ContenderKind::KubeRuntime,
                        1.0,
                        800 << 20,
                        1_600 << 20,
                        2.0,
                        500_000.0,
                    ),
                    result(ContenderKind::Floor, 1.0, 20 << 20, 30 << 20, 0.5, f64::NAN),
                ],
            }],
        }
    }

    #[test]
    fn targets_compare_the_headline_with_kube_runtime_and_the_floor() {
        let mut size = sample().sizes.remove(0);
        // The lookup target applies from 100k pods on.
        assert!(
            !targets(&size)
                .iter()
                .any(|c| c.target.starts_with("namespace"))
        );
        size.pods = LOOKUP_TARGET_PODS;
        let checks = targets(&size);
        let by_name = |prefix: &str| {
            checks
                .iter()
                .find(|c| c.target.starts_with(prefix))
                .unwrap()
        };
        let sync = by_name("cold sync");
        // Medians: 1.2 vs 1.1 (two runs each, +0.2 on the second).
        assert!((sync.measured.unwrap() - 1.2 / 1.1).abs() < 1e-9);
        assert_eq!(sync.met(), Some(true));
        let rss = by_name("RSS");
        assert!((rss.measured.unwrap() - 0.875).abs() < 1e-9);
        assert_eq!(rss.met(), Some(false));
        let relist = by_name("relist");
        assert!((relist.measured.unwrap() - 900.0 / 700.0).abs() < 1e-9);
        assert_eq!(relist.met(), Some(true));
        let watch = by_name("watch");
        assert!((watch.measured.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(watch.met(), Some(true));
        let lookup = by_name("namespace");
        assert!((lookup.measured.unwrap() - 500.0).abs() < 1e-9);
        assert_eq!(lookup.met(), Some(true));
    }

    #[test]
    fn missing_contenders_leave_targets_unmeasured() {
        let mut size = sample().sizes.remove(0);
        size.pods = LOOKUP_TARGET_PODS;
        size.contenders
            .retain(|c| c.kind == ContenderKind::Informer);
        let checks = targets(&size);
        // Four of issue 7's five, and all seven of issue 15 (no compact store, no floor).
        assert_eq!(checks.iter().filter(|c| c.met().is_none()).count(), 11);
        assert_eq!(checks.iter().filter(|c| c.met() == Some(true)).count(), 1);
    }

    #[test]
    fn compact_targets_read_the_compact_contender_and_its_cold_lookups() {
        let mut size = sample().sizes.remove(0);
        let mut compact = result(
            ContenderKind::InformerCompact,
            1.0,
            100 << 20,
            110 << 20,
            1.0,
            9_000_000.0,
        );
        let cold = |p50: f64, p99: f64| Summary {
            count: 2_000,
            p50,
            p90: p99,
            p99,
            max: p99,
            mean: p50,
        };
        if let Some(l) = compact.lookups.as_mut() {
            l.cold = Some(ColdLookups {
                get: cold(25.0, 90.0),
                namespace: cold(15_000.0, 30_000.0),
            });
        }
        size.contenders.push(compact);
        let checks = targets(&size);
        let by_name = |prefix: &str| {
            checks
                .iter()
                .find(|c| c.target.starts_with(prefix))
                .unwrap_or_else(|| panic!("no target {prefix:?}"))
        };
        let rss = by_name("compact store: RSS");
        assert!((rss.measured.unwrap() - 100.0 / 800.0).abs() < 1e-9);
        assert_eq!(rss.met(), Some(true));
        assert_eq!(by_name("compact store: relist").met(), Some(true));
        let p50 = by_name("compact store: get by namespace/name, cold key, p50");
        assert_eq!((p50.measured, p50.met()), (Some(25.0), Some(false)));
        assert_eq!(value_text(p50.unit, p50.measured), "25 µs");
        assert_eq!(limit_text(p50), "≤ 20 µs");
        let p99 = by_name("compact store: get by namespace/name, cold key, p99");
        assert_eq!(p99.met(), Some(true));
        assert_eq!(by_name("compact store: pods of one").met(), Some(true));
        // Same CPU per event as the floor in the sample.
        assert_eq!(by_name("CPU per watch event").met(), Some(true));
        let text = render(
            &SuiteResults {
                settings: sample().settings,
                sizes: vec![size],
            },
            &ReportContext {
                machine: test_machine(),
                date: "2026-01-01 00:00 UTC".into(),
                command: "cargo xtask bench".into(),
                analysis: None,
            },
        );
        assert!(
            text.contains("| informer-rs, compact store (full objects) | 25 µs | 90 µs | 90 µs | 90 µs | 15.0 ms | 30.0 ms | 30.0 ms |"),
            "{text}"
        );
    }

    /// The machine the tests' reports name.
    fn test_machine() -> Machine {
        Machine {
            cpu: "Test CPU".into(),
            cores: 2,
            memory_bytes: 8 << 30,
            kernel: "6.0".into(),
            rustc: "rustc 1.95.0".into(),
            allocator: crate::machine::SYSTEM_ALLOCATOR.into(),
        }
    }

    #[test]
    fn the_report_names_the_allocator_of_the_run() {
        let mut context = ReportContext {
            machine: test_machine(),
            date: "2026-01-01 00:00 UTC".into(),
            command: "cargo xtask bench".into(),
            analysis: None,
        };
        let results = SuiteResults {
            settings: sample().settings,
            sizes: Vec::new(),
        };
        let text = render(&results, &context);
        assert!(
            text.contains("the system allocator (glibc malloc) for all"),
            "{text}"
        );
        context.machine.allocator = "mimalloc (test)".into();
        let text = render(&results, &context);
        assert!(text.contains("mimalloc (test) for all"), "{text}");
        assert!(!text.contains("glibc"), "{text}");
    }

    #[test]
    fn the_report_has_every_section_and_the_analysis() {
        let context = ReportContext {
            machine: test_machine(),
            date: "2026-01-01 00:00 UTC".into(),
            command: "cargo xtask bench".into(),
            analysis: Some("## Analysis\n\nWhy.\n".into()),
        };
        let text = render(&sample(), &context);
        for part in [
            "`cargo xtask bench`",
            "Test CPU (2 cores), 8,192 MiB RAM",
            "## Targets",
            "| cold sync ≤ 1.2× the floor | 10,000 | 1.09× | ≤ 1.20× | **met** |",
            "| RSS after sync ≤ 0.8× kube-runtime's | 10,000 | 0.88× | ≤ 0.80× | **missed** |",
            "### Cold sync",
            "### Memory",
            "### Watch",
            "### Lookups",
            "| informer-rs (default) | 1.0 µs | 500× | 100 ns | 1.00× |",
            "## Analysis\n\nWhy.\n",
        ] {
            assert!(text.contains(part), "missing {part:?} in:\n{text}");
        }
        // The floor has no lookup row.
        assert!(!text.contains("| floor: kube-client list/watch, no cache | –"));
    }

    #[test]
    fn numbers_are_readable() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(mib(1_048_576.0 * 5.25), "5.2 MiB");
        assert_eq!(mib(1_048_576.0 * 4_321.0), "4,321 MiB");
        assert_eq!(secs(12.345), "12.3 s");
        assert_eq!(secs(1.234), "1.23 s");
        assert_eq!(micros(850.0), "850 µs");
        assert_eq!(micros(12_345.0), "12.3 ms");
        assert_eq!(nanos(1_500.0), "1.5 µs");
        assert_eq!(nanos(2_500_000.0), "2.50 ms");
        assert_eq!(times(Some(0.934)), "0.93×");
        assert_eq!(times(Some(1234.0)), "1,234×");
        assert_eq!(times(None), "–");
        assert_eq!(rate(12_345.4), "12,345/s");
    }
}
