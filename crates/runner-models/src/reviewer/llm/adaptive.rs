//! Adaptive concurrency per endpoint: one controller per model server (its base URL and the
//! identity of the API key used there, never the key itself), shared by every reviewer, judge,
//! claims generator and embedder of the process that talks to it.
//!
//! The controller starts at the configured limit, or at [`SLOW_START_LIMIT`] when that is
//! smaller, and then grows by one for every answer (doubling each round of answers, TCP's slow
//! start) until the first congestion signal or the ceiling: a server that rate-limits meets a
//! first wave of 16 requests rather than all the configured ones. From the first signal on it
//! adjusts the limit AIMD-style: halved on a 429 or
//! a 503, cut by a fifth when latency rises (its recent average past twice its long-run
//! average, a baseline that spreads over a hundred answers so a model's own spread of answer
//! lengths does not read as congestion, and that follows a server slower for good), and
//! raised by one for every `limit` successes, never above the ceiling (the largest configured
//! limit of its users; each user's own limit still applies to its own requests). A congestion
//! signal cuts the limit once per generation: answers to requests sent before the last cut do
//! not cut it again. OpenAI's `x-ratelimit-remaining-requests` / `-tokens` and
//! `x-ratelimit-reset-requests` / `-tokens` (`1s`, `6m0s`, `20ms`) pace the endpoint before a
//! 429 happens: once the remaining requests reach 0, or the remaining tokens fall below what a
//! request has cost on average, new requests wait until the reset (counted from when the
//! request that was answered was sent), and a 429 that meets such a hold retries when it ends.

use reqwest::header::HeaderMap;
use serde::Serialize;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// A new endpoint's first limit, when the configured one is larger.
pub const SLOW_START_LIMIT: usize = 16;
/// Windows of answers (each `limit` of them) the limit stays one below where a 429 last cut
/// it before it steps there again: a limit that met the server's rate limit is probed again
/// now and then, not after every window.
pub const PLATEAU_WINDOWS: usize = 16;
/// The limit's factor on a 429 or a 503.
pub const THROTTLED_FACTOR: f64 = 0.5;
/// The limit's factor when latency rises.
pub const LATENCY_FACTOR: f64 = 0.8;
/// Latency has risen when its recent average exceeds the baseline by this factor.
pub const LATENCY_RISE: f64 = 2.0;
/// Weight of a new latency in the recent average (about the last five answers).
const RECENT_WEIGHT: f64 = 0.3;
/// Weight of a new latency in the baseline, the long-run average (about the last hundred).
const BASELINE_WEIGHT: f64 = 0.01;
/// Answers after a cut before latency may cut again (at least twice the limit).
const LATENCY_WARMUP: u64 = 8;

/// How one attempt ended, as the controller sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// An answer, after this long.
    Success(Duration),
    /// 429: the server's rate limit.
    Throttled,
    /// 503: the server is overloaded.
    Overloaded,
    /// Anything else (a connection error, another status): no signal about load.
    Other,
}

/// What the `x-ratelimit-*` headers of one answer said.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateHeaders {
    pub remaining_requests: Option<u64>,
    pub remaining_tokens: Option<u64>,
    pub reset_requests: Option<Duration>,
    pub reset_tokens: Option<Duration>,
}

impl RateHeaders {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let count = |name: &str| text(name).and_then(|t| t.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0).map(|v| v as u64);
        Self {
            remaining_requests: count("x-ratelimit-remaining-requests"),
            remaining_tokens: count("x-ratelimit-remaining-tokens"),
            reset_requests: text("x-ratelimit-reset-requests").and_then(parse_reset),
            reset_tokens: text("x-ratelimit-reset-tokens").and_then(parse_reset),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A reset time as OpenAI writes it, a Go duration (`1s`, `6m0s`, `20ms`, `1h2m3.5s`, `250us`),
/// or a plain number of seconds.
pub fn parse_reset(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let mut total = 0.0f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let value: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += value * scale;
    }
    total.is_finite().then(|| Duration::from_secs_f64(total))
}

/// The adaptive limit of one endpoint.
pub struct Controller {
    /// The base URL as reports show it: no credentials, no query.
    display: String,
    semaphore: Arc<Semaphore>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    limit: usize,
    ceiling: usize,
    /// Successes since the last step up: one more place for every `limit` of them.
    growth: usize,
    /// No congestion signal yet: one more place for every success.
    slow_start: bool,
    /// The limit a 429 or a 503 last cut: growth stops one below it for [`PLATEAU_WINDOWS`]
    /// windows of answers, then steps back to it and goes on at the usual pace.
    throttled_at: Option<usize>,
    /// Permits to take out of circulation as they come back (the limit was cut below the
    /// requests in flight).
    debt: usize,
    /// Bumped by every cut: a congestion signal cuts at most once per generation.
    generation: u64,
    min_limit: usize,
    max_limit: usize,
    /// New requests wait until then (`x-ratelimit-*`).
    hold_until: Option<Instant>,
    /// Recent average latency and the baseline, in seconds.
    recent: Option<f64>,
    baseline: Option<f64>,
    /// Answers since the last cut.
    since_cut: u64,
    successes: u64,
    requests: u64,
    throttled: u64,
    holds: u64,
    /// Average tokens one request costs (prompt + completion), when servers report them.
    tokens_per_request: Option<f64>,
}

/// A place on an endpoint: held while one attempt is in flight.
pub struct Permit {
    controller: Arc<Controller>,
    permit: Option<OwnedSemaphorePermit>,
    generation: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else { return };
        let mut s = self.controller.lock();
        if s.debt > 0 {
            s.debt -= 1;
            permit.forget();
        } else {
            drop(s);
            drop(permit);
        }
    }
}

impl Controller {
    /// A controller for `url` whose ceiling is `limit` (at least 1), starting at it or at
    /// [`SLOW_START_LIMIT`], whichever is smaller.
    pub fn new(url: &str, limit: usize) -> Arc<Self> {
        let ceiling = limit.max(1);
        let limit = ceiling.min(SLOW_START_LIMIT);
        Arc::new(Self {
            display: display_url(url),
            semaphore: Arc::new(Semaphore::new(limit)),
            state: Mutex::new(State {
                limit,
                ceiling,
                growth: 0,
                slow_start: true,
                throttled_at: None,
                debt: 0,
                generation: 0,
                min_limit: limit,
                max_limit: limit,
                hold_until: None,
                recent: None,
                baseline: None,
                since_cut: 0,
                successes: 0,
                requests: 0,
                throttled: 0,
                holds: 0,
                tokens_per_request: None,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current limit.
    pub fn limit(&self) -> usize {
        self.lock().limit
    }

    /// Answers received since the controller was made.
    pub fn successes(&self) -> u64 {
        self.lock().successes
    }

    /// Another user allows more at once: the ceiling rises to its limit, and so does the limit
    /// while nothing has cut it (up to [`SLOW_START_LIMIT`], from where slow start goes on).
    pub fn raise_ceiling(&self, limit: usize) {
        let mut s = self.lock();
        if limit <= s.ceiling {
            return;
        }
        s.ceiling = limit;
        if s.slow_start {
            let by = limit.min(SLOW_START_LIMIT).saturating_sub(s.limit);
            self.grow(&mut s, by);
        }
    }

    /// Waits for a place under the limit and for any hold to pass.
    pub async fn acquire(self: &Arc<Self>) -> Permit {
        loop {
            let hold = self.hold();
            match hold {
                Some(until) => tokio::time::sleep_until(until).await,
                None => break,
            }
        }
        let permit = self.semaphore.clone().acquire_owned().await.ok();
        // A hold that began while this request queued applies to it too.
        while let Some(until) = self.hold() {
            tokio::time::sleep_until(until).await;
        }
        let generation = self.lock().generation;
        Permit { controller: self.clone(), permit, generation }
    }

    /// Until when new requests are held (`x-ratelimit-*`), if they are.
    pub fn hold(&self) -> Option<Instant> {
        let mut s = self.lock();
        match s.hold_until {
            Some(until) if until > Instant::now() => Some(until),
            Some(_) => {
                s.hold_until = None;
                None
            }
            None => None,
        }
    }

    /// Records how an attempt made under `permit` ended.
    pub fn record(&self, permit: &Permit, outcome: Outcome) {
        let mut s = self.lock();
        s.requests += 1;
        let current = permit.generation == s.generation;
        match outcome {
            Outcome::Success(latency) => {
                s.successes += 1;
                s.since_cut += 1;
                // Averages of all answers so far until they have seen enough to be moving ones.
                let x = latency.as_secs_f64();
                let seen = s.successes as f64;
                let recent = s.recent.map_or(x, |r| r + RECENT_WEIGHT.max(1.0 / seen) * (x - r));
                let baseline = s.baseline.map_or(x, |b| b + BASELINE_WEIGHT.max(1.0 / seen) * (x - b));
                s.recent = Some(recent);
                s.baseline = Some(baseline);
                // While latency stays up the limit does not grow; it is cut once a window of
                // answers since the last cut has seen it.
                if recent > LATENCY_RISE * baseline {
                    let settled = s.since_cut >= LATENCY_WARMUP.max(2 * s.limit as u64);
                    if current && settled && s.limit > 1 {
                        self.cut(&mut s, LATENCY_FACTOR);
                    }
                } else if s.slow_start {
                    self.grow(&mut s, 1);
                } else {
                    s.growth += 1;
                    let below_the_last_cut = s.throttled_at.is_some_and(|at| s.limit + 1 >= at);
                    let window = if below_the_last_cut { PLATEAU_WINDOWS * s.limit } else { s.limit };
                    if s.growth >= window {
                        s.growth = 0;
                        self.grow(&mut s, 1);
                        // Back where the cut came from: from here on it probes at the usual pace.
                        if below_the_last_cut {
                            s.throttled_at = None;
                        }
                    }
                }
            }
            Outcome::Throttled | Outcome::Overloaded => {
                if outcome == Outcome::Throttled {
                    s.throttled += 1;
                }
                if current {
                    s.throttled_at = Some(s.limit);
                    self.cut(&mut s, THROTTLED_FACTOR);
                }
            }
            Outcome::Other => {}
        }
    }

    /// What a request cost in tokens, for the `x-ratelimit-remaining-tokens` rule.
    pub fn record_tokens(&self, tokens: u64) {
        let mut s = self.lock();
        let t = tokens as f64;
        s.tokens_per_request = Some(s.tokens_per_request.map_or(t, |avg| avg + RECENT_WEIGHT * (t - avg)));
    }

    /// Applies the `x-ratelimit-*` headers of the answer to a request sent at `sent`: holds new
    /// requests until the reset when no request, or not enough tokens for one, remain. The
    /// reset counts from when the request was sent (a server states its limits as the request
    /// arrives), so answers that took long to come hold no longer than the fresh ones. A hold
    /// lasts at most `cap`.
    pub fn observe(&self, headers: &RateHeaders, cap: Duration, sent: Instant) {
        if headers.is_empty() {
            return;
        }
        let mut s = self.lock();
        let needed = s.tokens_per_request.map_or(1, |t| t.ceil().max(1.0) as u64);
        let mut wait: Option<Duration> = None;
        if let (Some(0), Some(reset)) = (headers.remaining_requests, headers.reset_requests) {
            wait = Some(reset);
        }
        if let (Some(left), Some(reset)) = (headers.remaining_tokens, headers.reset_tokens) {
            if left < needed {
                wait = Some(wait.map_or(reset, |w| w.max(reset)));
            }
        }
        let Some(wait) = wait.map(|w| w.min(cap)) else { return };
        let until = sent + wait;
        if until <= Instant::now() {
            return;
        }
        if s.hold_until.is_none_or(|h| h < until) {
            if s.hold_until.is_none_or(|h| h <= Instant::now()) {
                s.holds += 1;
            }
            s.hold_until = Some(until);
        }
    }

    fn cut(&self, s: &mut State, factor: f64) {
        let new = ((s.limit as f64 * factor).floor() as usize).max(1);
        let cut = s.limit - new;
        s.limit = new;
        s.growth = 0;
        s.slow_start = false;
        s.generation += 1;
        s.since_cut = 0;
        s.min_limit = s.min_limit.min(new);
        if cut > 0 {
            let forgotten = self.semaphore.forget_permits(cut);
            s.debt += cut - forgotten;
        }
    }

    fn grow(&self, s: &mut State, by: usize) {
        let by = by.min(s.ceiling.saturating_sub(s.limit));
        if by == 0 {
            return;
        }
        s.limit += by;
        s.max_limit = s.max_limit.max(s.limit);
        let repaid = by.min(s.debt);
        s.debt -= repaid;
        if by > repaid {
            self.semaphore.add_permits(by - repaid);
        }
    }

    fn counters(&self) -> (u64, u64, u64) {
        let s = self.lock();
        (s.requests, s.throttled, s.holds)
    }

    /// Starts a new reporting window: the lowest and highest limit are the current one.
    fn reset_extremes(&self) {
        let mut s = self.lock();
        s.min_limit = s.limit;
        s.max_limit = s.limit;
    }
}

/// `url` without credentials, query or fragment, for reports.
pub fn display_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => "(unparsable URL)".to_string(),
    }
}

/// What an endpoint's controller did during one execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointReport {
    /// The base URL, without credentials or query; `#2`, `#3` … when several API keys share it.
    pub endpoint: String,
    /// The largest configured limit of its users.
    pub ceiling: usize,
    /// The limit it settled on.
    pub final_limit: usize,
    pub min_limit: usize,
    pub max_limit: usize,
    /// Attempts that got an answer or an error.
    pub requests: u64,
    /// Answers with status 429.
    pub throttled: u64,
    /// Times new requests were held by the `x-ratelimit-*` headers.
    pub held: u64,
}

struct Entry {
    url: String,
    /// blake3 of the API key: which key, never the key.
    key: Option<String>,
    controller: Arc<Controller>,
}

/// Every endpoint's controller in this process.
pub struct Registry {
    entries: Mutex<Vec<Entry>>,
}

impl Registry {
    pub fn global() -> &'static Registry {
        static GLOBAL: OnceLock<Registry> = OnceLock::new();
        GLOBAL.get_or_init(|| Registry { entries: Mutex::new(Vec::new()) })
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The controller of `url` used with `api_key`, made at `limit` or raised to it.
    pub fn controller(&self, url: &str, api_key: Option<&str>, limit: usize) -> Arc<Controller> {
        let url = url.trim_end_matches('/');
        let key = api_key.map(key_identity);
        let mut entries = self.entries();
        if let Some(e) = entries.iter().find(|e| e.url == url && e.key == key) {
            e.controller.raise_ceiling(limit);
            return e.controller.clone();
        }
        let controller = Controller::new(url, limit);
        entries.push(Entry { url: url.to_string(), key, controller: controller.clone() });
        controller
    }

    /// Opens a reporting window over every controller, present and future.
    pub fn window(&'static self) -> Window {
        let entries = self.entries();
        let baseline = entries
            .iter()
            .map(|e| {
                e.controller.reset_extremes();
                (e.controller.clone(), e.controller.counters())
            })
            .collect();
        Window { registry: self, baseline }
    }
}

/// The identity of an API key: its blake3, never the key.
pub fn key_identity(key: &str) -> String {
    blake3::hash(key.as_bytes()).to_hex().to_string()
}

/// The controllers' activity since the window opened.
pub struct Window {
    registry: &'static Registry,
    baseline: Vec<(Arc<Controller>, (u64, u64, u64))>,
}

impl Window {
    /// One report per endpoint that made requests since the window opened, in URL order.
    pub fn reports(&self) -> Vec<EndpointReport> {
        let entries = self.registry.entries();
        let mut out: Vec<(String, usize, EndpointReport)> = Vec::new();
        for e in entries.iter() {
            let (requests, throttled, holds) = e.controller.counters();
            let (r0, t0, h0) = self.baseline.iter().find(|(c, _)| Arc::ptr_eq(c, &e.controller)).map_or((0, 0, 0), |(_, counts)| *counts);
            if requests == r0 {
                continue;
            }
            let s = e.controller.lock();
            let same_url = entries.iter().filter(|other| other.url == e.url).position(|other| Arc::ptr_eq(&other.controller, &e.controller)).unwrap_or(0);
            out.push((
                e.url.clone(),
                same_url,
                EndpointReport {
                    endpoint: e.controller.display.clone(),
                    ceiling: s.ceiling,
                    final_limit: s.limit,
                    min_limit: s.min_limit,
                    max_limit: s.max_limit,
                    requests: requests - r0,
                    throttled: throttled - t0,
                    held: holds - h0,
                },
            ));
        }
        out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let shared: Vec<bool> = out.iter().map(|(url, _, _)| out.iter().filter(|(u, _, _)| u == url).count() > 1).collect();
        out.into_iter()
            .zip(shared)
            .map(|((_, index, mut report), shared)| {
                if shared {
                    report.endpoint = format!("{} #{}", report.endpoint, index + 1);
                }
                report
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn resets_parse_in_openais_formats() {
        let s = Duration::from_secs_f64;
        assert_eq!(parse_reset("1s"), Some(s(1.0)));
        assert_eq!(parse_reset("6m0s"), Some(s(360.0)));
        assert_eq!(parse_reset("20ms"), Some(s(0.02)));
        assert_eq!(parse_reset("1h2m3.5s"), Some(s(3723.5)));
        assert_eq!(parse_reset("59.789s"), Some(s(59.789)));
        assert_eq!(parse_reset("250us"), Some(s(0.000_25)));
        assert_eq!(parse_reset("2"), Some(s(2.0)), "a plain number is seconds");
        assert_eq!(parse_reset("0.5"), Some(s(0.5)));
        for bad in ["", "soon", "1d", "s", "1.2.3s", "-1s", "5 s"] {
            assert_eq!(parse_reset(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rate_headers_are_read_from_an_answer() {
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-remaining-requests", "0".parse().expect("value"));
        h.insert("x-ratelimit-remaining-tokens", "1500".parse().expect("value"));
        h.insert("x-ratelimit-reset-requests", "6m0s".parse().expect("value"));
        h.insert("x-ratelimit-reset-tokens", "20ms".parse().expect("value"));
        h.insert("x-ratelimit-limit-requests", "60".parse().expect("value"));
        let r = RateHeaders::from_headers(&h);
        assert_eq!(r.remaining_requests, Some(0));
        assert_eq!(r.remaining_tokens, Some(1500));
        assert_eq!(r.reset_requests, Some(Duration::from_secs(360)));
        assert_eq!(r.reset_tokens, Some(20 * MS));
        assert!(RateHeaders::from_headers(&HeaderMap::new()).is_empty());
    }

    /// A permit taken now (the controller's current generation).
    async fn permit(c: &Arc<Controller>) -> Permit {
        c.acquire().await
    }

    #[tokio::test(start_paused = true)]
    async fn throttling_halves_once_per_generation_and_successes_add_one_per_window() {
        let c = Controller::new("http://h/v1", 8);
        let old = permit(&c).await;
        let also_old = permit(&c).await;
        c.record(&old, Outcome::Throttled);
        assert_eq!(c.limit(), 4, "a 429 halves the limit");
        c.record(&also_old, Outcome::Throttled);
        assert_eq!(c.limit(), 4, "an answer to a request sent before the cut does not cut again");
        drop((old, also_old));
        let p = permit(&c).await;
        c.record(&p, Outcome::Overloaded);
        assert_eq!(c.limit(), 2, "a 503 halves it too");
        c.record(&p, Outcome::Overloaded);
        assert_eq!(c.limit(), 2);
        drop(p);
        // Additive increase: one step for every `limit` successes, up to one below the limit
        // the last cut came from (4).
        let p = permit(&c).await;
        c.record(&p, Outcome::Success(100 * MS));
        assert_eq!(c.limit(), 2);
        c.record(&p, Outcome::Success(100 * MS));
        assert_eq!(c.limit(), 3);
        // The step back to 4 waits PLATEAU_WINDOWS windows of answers.
        for _ in 0..PLATEAU_WINDOWS * 3 - 1 {
            c.record(&p, Outcome::Success(100 * MS));
        }
        assert_eq!(c.limit(), 3);
        c.record(&p, Outcome::Success(100 * MS));
        assert_eq!(c.limit(), 4);
        for _ in 0..100 {
            c.record(&p, Outcome::Success(100 * MS));
        }
        assert_eq!(c.limit(), 8, "never above the ceiling");
        drop(p);
        for expected in [4, 2, 1, 1] {
            let p = permit(&c).await;
            c.record(&p, Outcome::Throttled);
            assert_eq!(c.limit(), expected, "never below one");
        }
        let s = c.lock();
        assert_eq!((s.min_limit, s.max_limit, s.throttled, s.requests), (1, 8, 6, 2 + 2 + 2 + PLATEAU_WINDOWS as u64 * 3 + 100 + 4));
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_endpoint_starts_slowly_and_doubles_each_round_until_its_first_429() {
        let c = Controller::new("http://slow-start/v1", 64);
        assert_eq!(c.limit(), SLOW_START_LIMIT, "a first wave of {SLOW_START_LIMIT}, not 64");
        let p = permit(&c).await;
        for _ in 0..SLOW_START_LIMIT {
            c.record(&p, Outcome::Success(100 * MS));
        }
        assert_eq!(c.limit(), 2 * SLOW_START_LIMIT, "one more place per answer: doubled after a round");
        c.record(&p, Outcome::Throttled);
        assert_eq!(c.limit(), SLOW_START_LIMIT, "the first 429 halves it");
        drop(p);
        let p = permit(&c).await;
        for _ in 0..SLOW_START_LIMIT {
            c.record(&p, Outcome::Success(100 * MS));
        }
        assert_eq!(c.limit(), SLOW_START_LIMIT + 1, "then one place per window of answers");
        // A limit at or below the first wave starts where it is configured.
        assert_eq!(Controller::new("http://small/v1", 4).limit(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn rising_latency_cuts_the_limit_by_a_fifth() {
        let c = Controller::new("http://h/v1", 10);
        let p = permit(&c).await;
        for _ in 0..200 {
            c.record(&p, Outcome::Success(100 * MS));
        }
        assert_eq!(c.limit(), 10);
        // Three times slower: the recent average passes twice the long-run one within a few answers.
        let mut answers = 0;
        while c.limit() == 10 && answers < 20 {
            c.record(&p, Outcome::Success(300 * MS));
            answers += 1;
        }
        assert_eq!(c.limit(), 8, "cut by a fifth after {answers} slow answers");
        assert!(answers <= 5, "{answers}");
        drop(p);
        // Slow answers to requests sent before the cut do not cut again.
        let p = permit(&c).await;
        let mut more = 0;
        while c.limit() == 8 && more < 200 {
            c.record(&p, Outcome::Success(300 * MS));
            more += 1;
        }
        assert!(more >= LATENCY_WARMUP.max(16) as usize, "no second cut before a window of answers: {more}");
    }

    #[tokio::test(start_paused = true)]
    async fn answers_of_widely_spread_lengths_do_not_read_as_congestion() {
        // A model's answers take 0.5 s to 4 s by their length, in a fixed scrambled order:
        // latency varies eightfold but does not rise, so the limit stays where it is.
        let c = Controller::new("http://h/v1", 8);
        let p = permit(&c).await;
        let lengths = [500u64, 4000, 700, 1200, 3000, 600, 900, 2500, 800, 1500, 4000, 3500, 500, 1000, 700, 2000];
        for i in 0..2000 {
            c.record(&p, Outcome::Success(Duration::from_millis(lengths[(i * 7) % lengths.len()])));
        }
        assert_eq!((c.limit(), c.lock().min_limit), (8, 8));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_below_the_requests_in_flight_takes_permits_back_as_they_return() {
        let c = Controller::new("http://h/v1", 2);
        let a = permit(&c).await;
        let b = permit(&c).await;
        assert!(c.acquire().now_or_never().is_none(), "the limit is 2");
        c.record(&a, Outcome::Throttled);
        assert_eq!(c.limit(), 1);
        drop(a);
        assert!(c.acquire().now_or_never().is_none(), "the returned permit paid the debt: still one in flight");
        let waiting = tokio::spawn({
            let c = c.clone();
            async move { c.acquire().await.generation }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(b);
        assert_eq!(waiting.await.expect("task"), 1, "the waiting request gets the freed place, in the new generation");
        // Growing again adds permits (back to 2, where the cut came from, after the plateau).
        let p = permit(&c).await;
        for _ in 0..PLATEAU_WINDOWS {
            c.record(&p, Outcome::Success(10 * MS));
        }
        assert_eq!(c.limit(), 2);
        let q = c.acquire().now_or_never();
        assert!(q.is_some(), "a second place opened");
    }

    #[tokio::test(start_paused = true)]
    async fn no_remaining_requests_holds_new_requests_until_the_reset() {
        let c = Controller::new("http://h/v1", 4);
        let cap = Duration::from_secs(30);
        c.observe(&RateHeaders { remaining_requests: Some(3), reset_requests: Some(Duration::from_secs(9)), ..Default::default() }, cap, Instant::now());
        assert!(c.acquire().now_or_never().is_some(), "requests remain: no hold");
        let started = Instant::now();
        c.observe(&RateHeaders { remaining_requests: Some(0), reset_requests: Some(Duration::from_secs(2)), ..Default::default() }, cap, Instant::now());
        let p = c.acquire().await;
        assert_eq!(started.elapsed(), Duration::from_secs(2), "held until the reset (virtual time)");
        drop(p);
        // Tokens: below what a request costs on average.
        c.record_tokens(500);
        let started = Instant::now();
        c.observe(&RateHeaders { remaining_tokens: Some(400), reset_tokens: Some(Duration::from_millis(1500)), ..Default::default() }, cap, Instant::now());
        drop(c.acquire().await);
        assert_eq!(started.elapsed(), Duration::from_millis(1500));
        let started = Instant::now();
        c.observe(&RateHeaders { remaining_tokens: Some(600), reset_tokens: Some(Duration::from_secs(5)), ..Default::default() }, cap, Instant::now());
        drop(c.acquire().await);
        assert_eq!(started.elapsed(), Duration::ZERO, "enough tokens for a request: no hold");
        // A reset of six minutes is capped.
        let started = Instant::now();
        c.observe(&RateHeaders { remaining_requests: Some(0), reset_requests: parse_reset("6m0s"), ..Default::default() }, cap, Instant::now());
        drop(c.acquire().await);
        assert_eq!(started.elapsed(), cap);
        // The reset counts from when the request was sent: an answer that took a second holds
        // half a second for a reset of a second and a half, and none for one of a second.
        let sent = Instant::now();
        tokio::time::advance(Duration::from_secs(1)).await;
        let answered = Instant::now();
        c.observe(&RateHeaders { remaining_requests: Some(0), reset_requests: Some(Duration::from_secs(1)), ..Default::default() }, cap, sent);
        assert!(c.hold().is_none());
        c.observe(&RateHeaders { remaining_requests: Some(0), reset_requests: Some(Duration::from_millis(1500)), ..Default::default() }, cap, sent);
        drop(c.acquire().await);
        assert_eq!(answered.elapsed(), Duration::from_millis(500));
        assert_eq!(c.lock().holds, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_that_starts_while_a_request_queues_applies_to_it() {
        let c = Controller::new("http://h/v1", 1);
        let first = c.acquire().await;
        let queued = tokio::spawn({
            let c = c.clone();
            async move {
                let started = Instant::now();
                drop(c.acquire().await);
                started.elapsed()
            }
        });
        tokio::task::yield_now().await;
        c.observe(
            &RateHeaders { remaining_requests: Some(0), reset_requests: Some(Duration::from_secs(1)), ..Default::default() },
            Duration::from_secs(30),
            Instant::now(),
        );
        drop(first);
        assert_eq!(queued.await.expect("task"), Duration::from_secs(1));
    }

    #[test]
    fn the_registry_shares_a_controller_per_url_and_key_and_reports_a_window() {
        let r = Registry::global();
        let url = "http://registry-test.invalid:1/v1";
        let a = r.controller(url, Some("sk-one"), 2);
        let b = r.controller(&format!("{url}/"), Some("sk-one"), 6);
        assert!(Arc::ptr_eq(&a, &b), "same URL and key: one controller");
        assert_eq!(a.limit(), 6, "a user with a larger limit raises the ceiling, and the untouched limit with it");
        let other_key = r.controller(url, Some("sk-two"), 2);
        let no_key = r.controller(url, None, 2);
        assert!(!Arc::ptr_eq(&a, &other_key) && !Arc::ptr_eq(&a, &no_key) && !Arc::ptr_eq(&other_key, &no_key));
        let window = r.window();
        let p = a.acquire().now_or_never().expect("free");
        a.record(&p, Outcome::Throttled);
        a.record(&p, Outcome::Success(MS));
        let q = no_key.acquire().now_or_never().expect("free");
        no_key.record(&q, Outcome::Success(MS));
        let reports: Vec<EndpointReport> = window.reports().into_iter().filter(|r| r.endpoint.starts_with("http://registry-test.invalid")).collect();
        assert_eq!(reports.len(), 2, "only endpoints with requests in the window: {reports:?}");
        let throttled = reports.iter().find(|r| r.throttled == 1).expect("the throttled one");
        assert_eq!((throttled.ceiling, throttled.final_limit, throttled.min_limit, throttled.max_limit, throttled.requests), (6, 3, 3, 6, 2));
        assert!(reports.iter().all(|r| r.endpoint.starts_with("http://registry-test.invalid:1/v1 #")), "two keys at one URL are told apart: {reports:?}");
        assert!(!format!("{reports:?}").contains("sk-"), "no key in a report");
    }

    #[test]
    fn reports_show_no_credentials() {
        assert_eq!(display_url("http://user:pass@h:8080/v1?key=secret#x"), "http://h:8080/v1");
        assert_eq!(display_url("https://api.example.com/v1/"), "https://api.example.com/v1");
        assert_eq!(display_url("http://h:1"), "http://h:1");
    }
}
