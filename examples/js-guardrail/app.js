// js-guardrail: refuses a file write that holds an AWS access key id, and once the
// session has tried `curl_after` of them (config, default 3), refuses curl too.
//
// Build: npm install && npm run build   (guardrail.wasm)
// Test:  sandrail test

import { get, set } from 'sandrail:guardrail/state@0.1.4';

const AWS_KEY = /AKIA[0-9A-Z]{16}/;
// The state key counting the keys seen in this session (a JSON number, as the
// Rust SDK would store it).
const KEYS_SEEN = 'keys-seen';

// JSON text from the host, or `fallback` when there is none or it does not parse.
function parsed(text, fallback) {
  if (text === undefined) return fallback;
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}

// A state call the host refuses throws (its `payload` says why): left uncaught
// it fails the guardrail, which the host reports (as Rust's `?`).
function keysSeen() {
  const seen = parsed(get(KEYS_SEEN), 0);
  return Number.isInteger(seen) ? seen : 0;
}

function violation(rule, message) {
  return { tag: 'violation', val: { rule, message } };
}

export function evaluate(event) {
  const config = parsed(event.config, {}) ?? {};
  let input = parsed(event.toolInput, {});
  if (input === null || typeof input !== 'object') input = {};
  const written = [input.content, input.new_string];
  if (written.some((text) => typeof text === 'string' && AWS_KEY.test(text))) {
    set(KEYS_SEEN, JSON.stringify(keysSeen() + 1));
    return violation(
      'aws-key',
      'This write holds an AWS access key id; read the key from the environment instead.',
    );
  }
  const curl = typeof input.command === 'string' && input.command.split(/\s+/).includes('curl');
  if (curl && keysSeen() >= (config.curl_after ?? 3)) {
    return violation(
      'curl-after-keys',
      'AWS keys were written in this session, so curl is refused; ask the user to run it.',
    );
  }
  return { tag: 'pass' };
}
