//! Coverage-guided fuzzing of every registered agent's reader and listing scan:
//! `scripts/fuzz.sh`. The first input byte picks the agent; the rest is the session file,
//! placed where that agent's own writer would put a session in a scratch home.
#![no_main]

use libfuzzer_sys::fuzz_target;
use session_relay::adapter::WriteRequest;
use session_relay::model::{Session, neutral};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let registry = session_relay::adapters::registry();
    let adapter = registry[pick as usize % registry.len()];
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let id = adapter.new_id();
    let req = WriteRequest {
        home: home.clone(),
        id: id.clone(),
        cwd: "/tmp/fuzz".into(),
        title: "fuzz".into(),
        provenance: serde_json::Value::Null,
        now: chrono::Utc::now(),
        standalone: None,
    };
    let place = adapter
        .write_session(&Session::new(adapter.name(), "fuzz", id), &req)
        .unwrap()
        .path;
    std::fs::create_dir_all(place.parent().unwrap()).unwrap();
    std::fs::write(&place, bytes).unwrap();
    for file in adapter.session_files(&home) {
        let _ = adapter.scan(&file);
    }
    if let Ok(session) = adapter.read(&place, Some(&home)) {
        let mut out = Vec::new();
        neutral::write(&session, &mut out).unwrap();
    }
});
