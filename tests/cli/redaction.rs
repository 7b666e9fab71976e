//! Planted secrets of every kind, in user text, tool input, tool output and file contents, in
//! both native formats: relayed both ways and exported, with 0 secrets left; and a corpus of
//! what sessions are full of (SHAs, UUIDs, images, lock-file hashes, code) with 0 false positives.

use crate::common::TestEnv;
use serde_json::{Value, json};

/// (kind, secret, how it appears in text). Fake values with the real shapes.
fn secrets() -> Vec<(&'static str, String, String)> {
    let s = |kind: &'static str, secret: &str, text: &str| {
        (kind, secret.to_string(), text.replace("{}", secret))
    };
    vec![
        s(
            "aws_access_key",
            "AKIA2E0A8F3B244C9986",
            "aws_access_key_id = {}",
        ),
        s(
            "aws_secret_key",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8sT4uV1w",
            "aws_secret_access_key={}",
        ),
        s(
            "github_token",
            "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
            "git clone https://github.com/x/y using {}",
        ),
        s(
            "github_token",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV0123",
            "GH={}",
        ),
        s(
            "gitlab_token",
            "glpat-Ab3dEf6hIj9kLm2nOp5q",
            "my gitlab token is {} ok",
        ),
        s(
            "openai_key",
            "sk-proj-Zx8vQ2mN5bT7kL1pR4wY9cF3hJ6dS0aG2eU8iO5tB7nM1vX4",
            "OpenAI: {}",
        ),
        s(
            "openai_key",
            "sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKl",
            "old key {}",
        ),
        s(
            "anthropic_key",
            "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-0123456789AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEf-AA",
            "key={} end",
        ),
        s(
            "slack_token",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "slack {}",
        ),
        s(
            "slack_webhook",
            "https://hooks.slack.com/services/T0ABCDEFG/B0HIJKLMN/AbCdEfGhIjKlMnOpQrStUvWx",
            "post to {}",
        ),
        s(
            "google_api_key",
            "AIzaSyD3x4mpl3K3y0123456789abcdefghijkl",
            "maps key {}",
        ),
        s(
            "stripe_key",
            "sk_live_51H8xYzAbCdEfGhIjKlMnOpQr",
            "STRIPE_KEY={}",
        ),
        s(
            "jwt",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "cookie: session={}",
        ),
        s(
            "private_key",
            "MIIEpAIBAAKCAQEA1x2y3z4AbCdEfGhIjKlMnOpQrStUvWxYz",
            "-----BEGIN RSA PRIVATE KEY-----\n{}\nQrStUvWxYz0123456789\n-----END RSA PRIVATE KEY-----",
        ),
        s(
            "url_credentials",
            "Sup3rS3cret!x",
            "DATABASE_URL=postgres://admin:{}@db.example.com:5432/prod",
        ),
        s(
            "assignment",
            "correct-horse-battery-staple",
            "DB_PASSWORD={}",
        ),
        s(
            "assignment",
            "9f8e7d6c5b4a39281706zz",
            "client_secret: \"{}\"",
        ),
        s("assignment", "Zm9vYmFyYmF6cXV4MTIz", "export API_TOKEN={}"),
        s(
            "high_entropy_value",
            "q8Zt3LmP0xR7vN2kW9yB4cF6",
            "SIGNING_SALT={}",
        ),
        s(
            "bearer_token",
            "abcdef0123456789ABCDEFxyz",
            "curl -H 'Authorization: Bearer {}' https://api",
        ),
    ]
}

/// Text that must come through untouched.
fn innocents() -> Vec<String> {
    vec![
        "commit 4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b (HEAD -> main), parent 4f3c2b1".into(),
        "session 0199a000-0000-7000-8000-00000000e0e0 and 771ce1df-ae7a-4516-8192-f08c38166af2".into(),
        "![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)".into(),
        "\"integrity\": \"sha512-Q6Q2xP4Zp2+Ql8m6mWbS1V6Xo5qYcXzv1uJ6tG0sHqB8x3Y2K5h9Jq7uS0l8pK4f2Z1QnE9wVbR6cT3yD0aLmA==\",".into(),
        "checksum = \"b8e2a4d6c8f0e2a4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2\"".into(),
        "github.com/pkg/errors v0.9.1 h1:FEBLx1zS214owpjy7qsBeixbURkuhQAwrK5UwLGTwt4=".into(),
        "let password = read_password(); if token_count > max_tokens { retry(); }".into(),
        "\"usage\":{\"input_tokens\":1200,\"output_tokens\":40,\"cache_read_input_tokens\":0}".into(),
        "The password must be at least 12 characters; never log it.".into(),
        "GIT_COMMIT=4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b".into(),
        "BUILD_ID=0199a000-0000-7000-8000-00000000e0e0".into(),
        "secret = os.environ[\"APP_SECRET\"]  # read from the environment".into(),
        "api_key: ${OPENAI_API_KEY}".into(),
    ]
}

fn claude_session(env: &TestEnv, texts: &[String], name: &str) -> String {
    let id = format!("5d0c3a1e-7b2f-4e8a-9c6d-0000000000{name}");
    let cwd = "/home/dev/projects/redact";
    let dir = env.claude_home().join("projects/-home-dev-projects-redact");
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines = Vec::new();
    let mut parent: Value = Value::Null;
    let mut n = 0;
    let mut push = |typ: &str, message: Value, extra: Value| {
        n += 1;
        let uuid = format!("u{n}");
        let mut l = json!({"parentUuid": parent, "isSidechain": false, "type": typ, "message": message,
            "uuid": uuid, "timestamp": format!("2026-11-29T12:{:02}:{:02}.000Z", n / 60, n % 60),
            "userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": id, "version": "2.1.332"});
        if let (Value::Object(a), Value::Object(b)) = (&mut l, extra) {
            a.extend(b);
        }
        lines.push(l.to_string());
        parent = json!(uuid);
    };
    let all = texts.join("\n");
    push(
        "user",
        json!({"role": "user", "content": format!("Set up the deploy. {all}")}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m1", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "tool_use", "id": "toolu_w", "name": "Write", "input": {"file_path": "/home/dev/projects/redact/.env", "content": all}}]}),
        json!({}),
    );
    push(
        "user",
        json!({"role": "user", "content": [{"tool_use_id": "toolu_w", "type": "tool_result", "content": "File created"}]}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m2", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": format!("cat .env # {}", texts[0])}}]}),
        json!({}),
    );
    push(
        "user",
        json!({"role": "user", "content": [{"tool_use_id": "toolu_b", "type": "tool_result", "content": [{"type": "text", "text": all}]}]}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m3", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "text", "text": format!("The .env holds: {all}")}]}),
        json!({}),
    );
    push(
        "user",
        json!({"role": "user", "content": "Thanks, now deploy."}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m4", "type": "message", "role": "assistant", "model": "x", "content": [{"type": "text", "text": "Deployed."}]}),
        json!({}),
    );
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
    id
}

fn codex_session(env: &TestEnv, texts: &[String], name: &str) -> String {
    let id = format!("0199f000-0000-7000-8000-0000000000{name}");
    let dir = env.codex_home().join("sessions/2026/11/29");
    std::fs::create_dir_all(&dir).unwrap();
    let all = texts.join("\n");
    let mut lines = vec![
        json!({"timestamp": "2026-11-29T10:00:00.000Z", "type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/home/dev/projects/redact", "originator": "codex_cli_rs", "cli_version": "0.60.0", "source": "cli"}}),
    ];
    let mut item = |t: &str, p: Value| {
        lines.push(json!({"timestamp": "2026-11-29T10:00:01.000Z", "type": t, "payload": p}))
    };
    item(
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("Set up the deploy. {all}")}]}),
    );
    item(
        "event_msg",
        json!({"type": "user_message", "message": format!("Set up the deploy. {all}")}),
    );
    item(
        "response_item",
        json!({"type": "function_call", "name": "shell", "arguments": json!({"command": ["bash", "-lc", format!("cat > .env <<EOF\n{all}\nEOF")]}).to_string(), "call_id": "c1"}),
    );
    item(
        "response_item",
        json!({"type": "function_call_output", "call_id": "c1", "output": json!({"output": all, "metadata": {"exit_code": 0}}).to_string()}),
    );
    item(
        "response_item",
        json!({"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": format!("*** Begin Patch\n*** Add File: config.env\n+{}\n*** End Patch\n", texts.join("\n+"))}),
    );
    item(
        "response_item",
        json!({"type": "custom_tool_call_output", "call_id": "c2", "output": "Exit code: 0\nOutput:\nSuccess."}),
    );
    item(
        "response_item",
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("Saved: {all}")}]}),
    );
    item(
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks, now deploy."}]}),
    );
    item(
        "event_msg",
        json!({"type": "user_message", "message": "Thanks, now deploy."}),
    );
    item(
        "response_item",
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Deployed."}]}),
    );
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(
        dir.join(format!("rollout-2026-11-29T10-00-00-{id}.jsonl")),
        text.join("\n") + "\n",
    )
    .unwrap();
    id
}

/// Every file a relay or export wrote, as one string, plus the reports.
fn relay_everything(env: &TestEnv, ids: &[String], proj: &str) -> (String, Vec<Value>) {
    let mut written = String::new();
    let mut reports = Vec::new();
    for id in ids {
        for to in session_relay::adapters::names() {
            let out = env.ok(&["relay", id, "--to", to, "--cwd", proj, "--json"]);
            let r: Value = serde_json::from_str(&out).unwrap();
            written
                .push_str(&std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap());
            reports.push(r);
        }
        for format in ["jsonl", "markdown"] {
            written.push_str(&env.ok(&["export", id, "--format", format]));
        }
    }
    written.push_str(
        &std::fs::read_to_string(env.codex_home().join("session_index.jsonl")).unwrap_or_default(),
    );
    written.push_str(
        &std::fs::read_to_string(env.dir.path().join("state/session-relay/ledger.jsonl")).unwrap(),
    );
    (written, reports)
}

#[test]
fn every_planted_secret_is_masked_in_both_directions() {
    let env = TestEnv::empty();
    let proj = env.project();
    let planted = secrets();
    let texts: Vec<String> = planted.iter().map(|p| p.2.clone()).collect();
    let ids = vec![
        claude_session(&env, &texts, "01"),
        codex_session(&env, &texts, "02"),
    ];
    let before = env.snapshot_stores();
    let (written, reports) = relay_everything(&env, &ids, &proj);
    let mut leaks = Vec::new();
    for (kind, secret, _) in &planted {
        if written.contains(secret.as_str()) {
            leaks.push(format!("{kind}: {secret}"));
        }
    }
    assert!(leaks.is_empty(), "secrets left:\n{}", leaks.join("\n"));
    // Every kind was found and counted in every relay.
    for r in &reports {
        let counts = &r["redactions"];
        for (kind, _, _) in &planted {
            assert!(
                counts[kind].as_u64().unwrap_or(0) > 0,
                "{kind} not counted: {counts}"
            );
        }
    }
    assert!(written.contains("[REDACTED:openai_key]"));
    // The sources are untouched and still hold the secrets (nothing is rewritten in place).
    let after = env.snapshot_stores();
    for (path, hash) in &before {
        assert_eq!(after.get(path), Some(hash), "{} changed", path.display());
    }
}

#[test]
fn what_sessions_are_full_of_is_not_masked() {
    let env = TestEnv::empty();
    let proj = env.project();
    let texts = innocents();
    let ids = vec![
        claude_session(&env, &texts, "03"),
        codex_session(&env, &texts, "04"),
    ];
    let (written, reports) = relay_everything(&env, &ids, &proj);
    assert!(
        !written.contains("[REDACTED"),
        "false positive:\n{}",
        written
            .lines()
            .filter(|l| l.contains("[REDACTED"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for r in &reports {
        assert_eq!(r["redactions"], json!({}), "false positive counted");
    }
    for t in &texts {
        // JSON escaping aside, each innocent line survives verbatim somewhere.
        let escaped = serde_json::to_string(t).unwrap();
        let escaped = &escaped[1..escaped.len() - 1];
        assert!(
            written.contains(t.as_str()) || written.contains(escaped),
            "altered: {t}"
        );
    }
}

#[test]
fn no_redact_warns_and_config_extends_the_rules() {
    let env = TestEnv::empty();
    let proj = env.project();
    let texts = vec!["internal ticket token ACME-INTERNAL-7f3a9c and key ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R".to_string()];
    let id = claude_session(&env, &texts, "05");
    let out = env
        .cmd()
        .args(["export", &id, "--no-redact"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: --no-redact"));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R")
    );
    let cfg = env.dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        "redaction:\n  extra_patterns:\n    - name: acme_ticket\n      regex: 'ACME-INTERNAL-(?P<secret>[0-9a-f]{6})'\n  allow:\n    - ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R\n",
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let exported = env.ok(&["--config", c, "export", &id]);
    assert!(
        exported.contains("ACME-INTERNAL-[REDACTED:acme_ticket]"),
        "{exported}"
    );
    assert!(
        exported.contains("ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"),
        "allow-listed value kept"
    );
    let r: Value = serde_json::from_str(&env.ok(&[
        "--config",
        c,
        "relay",
        &id,
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--dry-run",
        "--json",
    ]))
    .unwrap();
    // User text, Write content, Bash command, its output, the answer, and the title.
    assert_eq!(r["redactions"]["acme_ticket"], 6);
    let dry = env.ok(&["relay", &id, "--to", "codex", "--cwd", &proj, "--dry-run"]);
    assert!(
        dry.contains("secrets    6 masked (github_token 6)"),
        "{dry}"
    );
    std::fs::write(
        &cfg,
        "redaction:\n  extra_patterns:\n    - name: broken\n      regex: '(['\n",
    )
    .unwrap();
    let (code, err) = env.fails(&["--config", c, "list", "--all"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("extra_patterns") && err.contains("broken"),
        "{err}"
    );
}
