//! session-relay: move a coding-agent session into another agent's own store.
//!
//! Data flows one way (see the Design section of docs/development.md):
//!
//! command line (`cli`) -> options -> select (`select`: discover, list, cache) -> read
//! (`adapters`, through `adapter`) -> neutral session (`model`) -> plan (`plan`: shape, brief,
//! fit, summary) -> write (`adapters`) -> verify (`verify`) -> typed report (`commands`) ->
//! render (`render`: text or JSON).
//!
//! Helpers every stage may use: `text`, `fsutil`, `git`, `jsonl`, `paths`, `tokens`, `redact`,
//! `ledger`, `config`, `exit`, `progress`, `hookfile`. `bundle` carries a session to another
//! machine in one file.

pub mod adapter;
/// Agent adapters, one folder each under `adapters/` at the top of the repository.
#[path = "../adapters/mod.rs"]
pub mod adapters;
pub mod archive;
pub mod bundle;
pub mod cli;
pub mod commands;
pub mod config;
pub mod exit;
pub mod fsutil;
pub mod git;
pub mod hookfile;
pub mod jsonl;
pub mod ledger;
pub mod model;
pub mod paths;
pub mod plan;
pub mod progress;
pub mod redact;
pub mod render;
pub mod select;
pub mod text;
pub mod tokens;
pub mod verify;
