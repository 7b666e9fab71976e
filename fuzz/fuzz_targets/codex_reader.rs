//! Coverage-guided fuzzing of the codex reader and its listing scan: `scripts/fuzz.sh`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("home/sessions/2026/11/30/rollout-2026-11-30T00-00-00-0199f022-0000-7000-8000-000000000000.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, data).unwrap();
    let adapter = session_relay::store::adapter("codex").unwrap();
    let _ = adapter.list(&dir.path().join("home"), &session_relay::listcache::ListCache::none());
    if let Ok(session) = adapter.read(&path, None) {
        let mut out = Vec::new();
        session_relay::neutral::write(&session, &mut out).unwrap();
    }
});
