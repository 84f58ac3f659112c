//! Receipts to an OpenTelemetry collector: `sandrail serve` sends each receipt as
//! a log record over OTLP/HTTP; a local receiver decodes what arrives. The hook
//! path sends nothing; an unreachable collector's records wait and arrive later.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::serve::Server;
use crate::support::*;

/// A collector's OTLP/HTTP receiver: decodes each request's log records.
struct Receiver {
    port: u16,
    records: Arc<Mutex<Vec<Value>>>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    fn on(listener: TcpListener) -> Receiver {
        let port = listener.local_addr().expect("addr").port();
        let records = Arc::new(Mutex::new(Vec::new()));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (into, paths_into) = (Arc::clone(&records), Arc::clone(&paths));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let mut length = 0;
                let mut content_type = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if let Some(v) = lower.strip_prefix("content-type:") {
                        content_type = v.trim().to_owned();
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                assert_eq!(content_type, "application/json");
                let decoded: Value = serde_json::from_slice(&body).expect("an OTLP JSON body");
                let mut got = Vec::new();
                for resource in decoded["resourceLogs"].as_array().expect("resourceLogs") {
                    assert_eq!(
                        attr(&resource["resource"], "service.name"),
                        Some("sandrail".into())
                    );
                    for scope in resource["scopeLogs"].as_array().expect("scopeLogs") {
                        got.extend(
                            scope["logRecords"]
                                .as_array()
                                .expect("logRecords")
                                .iter()
                                .cloned(),
                        );
                    }
                }
                into.lock().expect("records").extend(got);
                paths_into.lock().expect("paths").push(
                    request_line
                        .split_whitespace()
                        .nth(1)
                        .unwrap_or_default()
                        .to_owned(),
                );
                let mut stream = reader.into_inner();
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
            }
        });
        Receiver {
            port,
            records,
            paths,
        }
    }

    /// The records received once there are at least `n` (within 15 s).
    fn wait_for(&self, n: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let records = self.records.lock().expect("records").clone();
            if records.len() >= n || started.elapsed() > Duration::from_secs(15) {
                return records;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A string attribute of a log record (or resource).
fn attr(record: &Value, key: &str) -> Option<String> {
    record["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .and_then(|a| a["value"]["stringValue"].as_str())
        .map(str::to_owned)
}

fn config(port: u16) -> String {
    format!(
        r#"
[receipts]
otlp = "http://127.0.0.1:{port}"

[[guardrail]]
name = "destructive-commands"
source = "builtin:destructive-commands"
events = ["PreToolUse"]
matcher = "Bash"
"#
    )
}

#[test]
fn serve_sends_each_receipt_to_the_collector_and_the_hook_sends_none() {
    let project = Project::new();
    let receiver = Receiver::on(TcpListener::bind("127.0.0.1:0").expect("bind"));
    project.config(&config(receiver.port));
    let server = Server::start(&project);
    assert_eq!(
        server
            .post(&project, &bash("otlp-1", "git push --force origin main"))
            .status,
        200
    );
    assert_eq!(server.post(&project, &bash("otlp-1", "ls")).status, 200);
    let records = receiver.wait_for(2);
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(
        receiver
            .paths
            .lock()
            .expect("paths")
            .iter()
            .all(|p| p == "/v1/logs")
    );

    // Each record is the receipt the file holds, with what a fleet filters on.
    let listed = project.run(&["receipts", "--json"]);
    let kept: Vec<Value> = listed
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a receipt"))
        .collect();
    assert_eq!(kept.len(), 2);
    let refused = &records[0];
    assert_eq!(attr(refused, "sandrail.session").as_deref(), Some("otlp-1"));
    assert_eq!(attr(refused, "sandrail.decision").as_deref(), Some("deny"));
    assert_eq!(
        attr(refused, "sandrail.guardrail").as_deref(),
        Some("destructive-commands")
    );
    assert_eq!(
        attr(refused, "sandrail.rule").as_deref(),
        kept[0]["guardrails"][0]["rule"].as_str()
    );
    assert!(attr(refused, "sandrail.rule").is_some());
    assert_eq!(
        attr(refused, "sandrail.input_sha256").as_deref(),
        kept[0]["input_sha256"].as_str()
    );
    assert_eq!(
        attr(refused, "sandrail.receipt.id").as_deref(),
        kept[0]["id"].as_str()
    );
    assert_eq!(refused["severityText"], "WARN");
    let body: Value = serde_json::from_str(
        refused["body"]["stringValue"]
            .as_str()
            .expect("the receipt as the body"),
    )
    .expect("JSON body");
    assert_eq!(body["id"], kept[0]["id"]);
    assert_eq!(
        attr(&records[1], "sandrail.decision").as_deref(),
        Some("allow")
    );

    // The one-shot hook, on the same config, sends nothing.
    project.hook(&bash("otlp-2", "git push --force origin main"));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(receiver.records.lock().expect("records").len(), 2);
    drop(server);
}

#[test]
fn receipts_wait_for_an_unreachable_collector_and_arrive_when_it_answers() {
    let project = Project::new();
    // A port nothing listens on yet.
    let reserved = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = reserved.local_addr().expect("addr").port();
    drop(reserved);
    project.config(&config(port));
    let server = Server::start(&project);
    for n in 0..3 {
        assert_eq!(
            server
                .post(&project, &bash("otlp-3", &format!("echo {n}")))
                .status,
            200
        );
    }
    std::thread::sleep(Duration::from_millis(800));
    let receiver = Receiver::on(TcpListener::bind(("127.0.0.1", port)).expect("rebind"));
    let records = receiver.wait_for(3);
    assert_eq!(records.len(), 3, "{records:?}");
    let (_, stderr) = server.stop();
    assert!(
        stderr.contains("cannot send receipts to the OTLP collector"),
        "{stderr}"
    );
    assert!(stderr.contains("takes receipts again"), "{stderr}");
}

#[test]
fn check_config_refuses_a_collector_url_it_cannot_speak_to() {
    let project = Project::new();
    project.config(
        "[receipts]\notlp = \"https://collector.example:4318\"\n\n[[guardrail]]\nname = \"d\"\nsource = \"builtin:destructive-commands\"\nevents = [\"PreToolUse\"]\n",
    );
    let out = project.run(&["check-config"]);
    assert_eq!(out.code(), Some(1), "{}", out.stdout());
    let said = format!("{}{}", out.stdout(), out.stderr());
    assert!(said.contains("[receipts] otlp"), "{said}");
    assert!(said.contains("only http://"), "{said}");
}
