//! Integration tests: every test runs the real `sandrail` binary in a scratch
//! project on real-shaped Claude Code payloads.

mod support;

mod adoption;
mod adversarial;
mod authoring;
mod bad_input;
mod cache;
mod checkpoints;
mod cli;
mod concurrency;
mod contracts;
mod cycles;
mod dcg_corpus;
mod deadlines;
mod destructive;
mod dotforge;
mod escalation;
mod events;
mod facts;
mod failure_policy;
mod flags;
mod harnesses;
mod hostile;
mod inspect;
mod integrity;
mod isolation;
mod limits;
mod managed;
mod os_sandbox;
mod otlp;
mod protect;
mod receipts;
mod sdk;
mod serve;
mod sessions;
mod shell_model;
mod trust;
mod turns;
