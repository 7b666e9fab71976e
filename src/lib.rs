//! session-relay: read Claude Code and Codex CLI sessions into one neutral model.
//!
//! Data flows one way: discover (store) -> read (adapters) -> neutral session -> report/export.

pub mod adapter;
pub mod brief;
pub mod budget;
pub mod clean;
pub mod cli;
pub mod commands;
pub mod config;
pub mod exit;
pub mod handoff;
pub mod jsonl;
pub mod ledger;
pub mod listcache;
pub mod neutral;
pub mod redact;
pub mod relay;
pub mod session;
pub mod store;
pub mod tokens;

/// Agent adapters, one folder each under `adapters/` at the top of the repository.
#[path = "../adapters/mod.rs"]
pub mod adapters;
