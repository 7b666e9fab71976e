//! Coverage-guided fuzzing of the claude reader and its listing scan: `scripts/fuzz.sh`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("home/projects/-tmp-fuzz/5d0c3a1e-7b2f-4e8a-9c6d-00000000f022.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, data).unwrap();
    let adapter = session_relay::store::adapter("claude").unwrap();
    let _ = adapter.list(&dir.path().join("home"), &session_relay::listcache::ListCache::none());
    if let Ok(session) = adapter.read(&path, None) {
        let mut out = Vec::new();
        session_relay::neutral::write(&session, &mut out).unwrap();
    }
});
