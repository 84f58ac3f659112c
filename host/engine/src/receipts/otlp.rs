//! Receipts for a fleet: `sandrail serve` sends each receipt to an OpenTelemetry
//! collector as a log record over OTLP/HTTP (`[receipts] otlp`), in OTLP's JSON
//! encoding, which every collector's OTLP receiver takes on `/v1/logs`.
//!
//! Only the server exports: the one-shot hook pays nothing for it. The receipts
//! file stays the record; the collector gets a copy. What the collector has not
//! taken waits in a bounded buffer and is sent again with a growing pause; past
//! the bound the oldest copies are dropped, and stderr says so each time the
//! state changes (unreachable, dropping, reachable again).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

use super::Receipt;

/// The most records kept for one collector while it cannot be reached.
pub const MAX_BUFFERED: usize = 10_000;
/// The most records in one request.
const BATCH: usize = 512;
/// How long one request may take, connecting included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause after a failed request, doubled each time up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(500);
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// How long shutdown waits for what is buffered to be sent.
pub const FLUSH_GRACE: Duration = Duration::from_secs(5);

pub use sandrail_policy::receipts::otlp::Endpoint;

/// The server's exporter: events hand it receipts, a task of its own sends them.
#[derive(Clone)]
pub struct Exporter {
    shared: Arc<Shared>,
}

struct Shared {
    queues: Mutex<HashMap<Endpoint, Queue>>,
    wake: tokio::sync::Notify,
}

#[derive(Default)]
struct Queue {
    /// Each record with its number in this queue, to tell what a request sent
    /// from what was dropped or added while it was under way.
    records: VecDeque<(u64, Value)>,
    numbered: u64,
    /// Dropped since the buffer last had room.
    dropped: u64,
    /// Why the last request failed, while the collector cannot be reached.
    failing: Option<String>,
    pause: Duration,
    next_try: Option<Instant>,
}

impl Exporter {
    /// Starts the sending task on `executor`.
    pub fn start(executor: &tokio::runtime::Handle) -> Exporter {
        let shared = Arc::new(Shared {
            queues: Mutex::new(HashMap::new()),
            wake: tokio::sync::Notify::new(),
        });
        executor.spawn(send_forever(Arc::clone(&shared)));
        Exporter { shared }
    }

    /// Queues `receipt` for `endpoint`. Never waits on the network.
    pub fn export(&self, endpoint: &Endpoint, receipt: &Receipt) {
        let record = log_record(receipt);
        {
            let mut queues = self
                .shared
                .queues
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let queue = queues.entry(endpoint.clone()).or_default();
            if queue.records.len() >= MAX_BUFFERED {
                queue.records.pop_front();
                if queue.dropped == 0 {
                    eprintln!(
                        "sandrail: {MAX_BUFFERED} receipts wait for the OTLP collector at {}; the oldest are dropped from the buffer (the receipts file keeps every one)",
                        endpoint.url()
                    );
                }
                queue.dropped += 1;
            }
            queue.numbered += 1;
            queue.records.push_back((queue.numbered, record));
        }
        self.shared.wake.notify_one();
    }

    /// Sends what is buffered, for at most `grace`: the server's last act.
    pub async fn flush(&self, grace: Duration) {
        let shared = &self.shared;
        let drained = tokio::time::timeout(grace, async {
            while shared.waiting() > 0 {
                if send_due(shared, true).await == 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        })
        .await;
        if drained.is_err() {
            eprintln!(
                "sandrail: {} receipts were not taken by the OTLP collector before shutdown (the receipts file keeps every one)",
                shared.waiting()
            );
        }
    }
}

impl Shared {
    /// How many records wait, for every collector.
    fn waiting(&self) -> usize {
        let queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        queues.values().map(|q| q.records.len()).sum()
    }
}

async fn send_forever(shared: Arc<Shared>) {
    loop {
        // Woken by a new record, or at least every second for a retry.
        let _ = tokio::time::timeout(Duration::from_secs(1), shared.wake.notified()).await;
        send_due(&shared, false).await;
    }
}

/// One round: a batch to each collector whose pause is over (every one, when
/// `now`). Returns how many records were taken.
async fn send_due(shared: &Shared, now: bool) -> usize {
    let due: Vec<(Endpoint, u64, Vec<Value>)> = {
        let queues = shared.queues.lock().unwrap_or_else(PoisonError::into_inner);
        queues
            .iter()
            .filter(|(_, q)| !q.records.is_empty())
            .filter(|(_, q)| now || q.next_try.is_none_or(|t| Instant::now() >= t))
            .map(|(e, q)| {
                let batch: Vec<_> = q.records.iter().take(BATCH).collect();
                let last = batch.last().map_or(0, |(n, _)| *n);
                (
                    e.clone(),
                    last,
                    batch.into_iter().map(|(_, r)| r.clone()).collect(),
                )
            })
            .collect()
    };
    let mut taken = 0;
    for (endpoint, last, batch) in due {
        let result = post(&endpoint, &batch).await;
        let mut queues = shared.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(queue) = queues.get_mut(&endpoint) else {
            continue;
        };
        match result {
            Ok(()) => {
                // What was sent, less what was dropped from the buffer meanwhile.
                while queue.records.front().is_some_and(|(n, _)| *n <= last) {
                    queue.records.pop_front();
                    taken += 1;
                }
                if let Some(why) = queue.failing.take() {
                    eprintln!(
                        "sandrail: the OTLP collector at {} takes receipts again (it had failed: {why}); {} still wait{}",
                        endpoint.url(),
                        queue.records.len(),
                        if queue.dropped > 0 {
                            format!(", {} were dropped from the buffer meanwhile", queue.dropped)
                        } else {
                            String::new()
                        }
                    );
                }
                queue.dropped = 0;
                queue.pause = Duration::ZERO;
                queue.next_try = None;
            }
            Err(why) => {
                if queue.failing.is_none() {
                    eprintln!(
                        "sandrail: cannot send receipts to the OTLP collector at {}: {why}; they wait in a buffer of at most {MAX_BUFFERED} and are sent again",
                        endpoint.url()
                    );
                }
                queue.failing = Some(why);
                queue.pause = (queue.pause * 2).clamp(FIRST_PAUSE, MAX_PAUSE);
                queue.next_try = Some(Instant::now() + queue.pause);
            }
        }
    }
    taken
}

/// One OTLP/HTTP request carrying `records`.
async fn post(endpoint: &Endpoint, records: &[Value]) -> Result<(), String> {
    let body = json!({
        "resourceLogs": [{
            "resource": {"attributes": [
                attribute("service.name", json!({"stringValue": "sandrail"})),
                attribute("service.version", json!({"stringValue": env!("CARGO_PKG_VERSION")})),
            ]},
            "scopeLogs": [{
                "scope": {"name": "sandrail.receipts", "version": env!("CARGO_PKG_VERSION")},
                "logRecords": records,
            }],
        }],
    });
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(&endpoint.authority)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = hyper::Request::post(endpoint.path.as_str())
            .header(hyper::header::HOST, endpoint.authority.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        // Read to the end: a partial-success answer says what was rejected.
        let answer = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!(
                "it answered {status}: {}",
                String::from_utf8_lossy(&answer[..answer.len().min(200)]).trim()
            ))
        }
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())),
    }
}

/// A receipt as an OpenTelemetry log record: the receipt itself as the body,
/// and what a fleet filters on as attributes.
pub fn log_record(receipt: &Receipt) -> Value {
    let unix_nanos = humantime::parse_rfc3339_weak(&receipt.time)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    // The guardrail that decided: the first that refused, else the first with a
    // rule to name.
    let decided = receipt
        .guardrails
        .iter()
        .find(|g| g.refuses)
        .or_else(|| receipt.guardrails.iter().find(|g| g.rule.is_some()));
    let mut attributes = vec![
        string("sandrail.receipt.id", &receipt.id),
        string("sandrail.session", &receipt.session),
        string("sandrail.event", &receipt.event),
        string("sandrail.decision", &receipt.decision),
        string("sandrail.gate_mode", receipt.gate.name()),
    ];
    let optional = [
        ("sandrail.tool", receipt.tool.as_deref()),
        ("sandrail.tool_use_id", receipt.tool_use_id.as_deref()),
        ("sandrail.input_sha256", receipt.input_sha256.as_deref()),
        ("sandrail.project", receipt.project.as_deref()),
        ("sandrail.policy", receipt.policy.as_deref()),
        ("sandrail.observed", receipt.observed.as_deref()),
        ("sandrail.guardrail", decided.map(|g| g.name.as_str())),
        ("sandrail.rule", decided.and_then(|g| g.rule.as_deref())),
        ("sandrail.level", decided.and_then(|g| g.level.as_deref())),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            attributes.push(string(key, value));
        }
    }
    attributes.push(attribute(
        "sandrail.guardrails",
        json!({"arrayValue": {"values": receipt
            .guardrails
            .iter()
            .map(|g| json!({"stringValue": g.name}))
            .collect::<Vec<_>>()}}),
    ));
    let refused = !matches!(receipt.decision.as_str(), "allow");
    json!({
        "timeUnixNano": unix_nanos.to_string(),
        "observedTimeUnixNano": unix_nanos.to_string(),
        "severityNumber": if refused { 13 } else { 9 },
        "severityText": if refused { "WARN" } else { "INFO" },
        "body": {"stringValue": serde_json::to_string(receipt).unwrap_or_default()},
        "attributes": attributes,
    })
}

fn string(key: &str, value: &str) -> Value {
    attribute(key, json!({"stringValue": value}))
}

fn attribute(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_an_http_url_with_the_logs_path() {
        let e = Endpoint::parse("http://collector:4318").expect("bare");
        assert_eq!(e.url(), "http://collector:4318/v1/logs");
        let e = Endpoint::parse("http://127.0.0.1:4318/v1/logs").expect("full");
        assert_eq!(e.url(), "http://127.0.0.1:4318/v1/logs");
        let e = Endpoint::parse("http://otel.example/prefix/").expect("prefix");
        assert_eq!(e.url(), "http://otel.example:80/prefix/v1/logs");
        assert!(
            Endpoint::parse("https://collector:4318")
                .expect_err("https")
                .contains("only http://")
        );
        assert!(Endpoint::parse("collector:4318").is_err());
        assert!(Endpoint::parse("http://user:pw@collector:4318").is_err());
    }
}
