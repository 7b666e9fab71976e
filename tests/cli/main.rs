//! The hermetic test suite: every command driven through the built binary in a temporary
//! environment (private agent homes, config and state; nothing of the developer's), plus the
//! property tests of the readers and the fit. The real-client checks are in `realclients.rs`.

#[path = "../common/mod.rs"]
mod common;

mod archive;
mod budget;
mod bundle;
mod clean;
mod copilot;
mod doctor;
mod export;
mod file_state;
mod first_hour;
mod fuzz_readers;
mod gemini;
mod hooks;
mod hostile;
mod layout;
mod lazy;
mod list_and_select;
mod log;
mod opencode;
mod out_folder;
mod pi;
mod picker;
mod qwen;
mod read;
mod readme;
mod redaction;
mod reformat;
mod registration;
mod relay;
mod shell;
mod stats;
mod status;
mod supersede;
mod tokenizer;
