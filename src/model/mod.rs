//! The neutral model: what every reader produces and every writer consumes.
//!
//! - `session`: the neutral session, its messages, todos and read statistics;
//! - `state`: what a message is and what was done to it (its kind, how its output was cut);
//! - `summary`: one session as the cheap listing sees it;
//! - `files`: what a session did to files, from its tool calls;
//! - `tools`: agent-neutral tool kinds, so that no adapter needs another agent's tool names;
//! - `neutral`: the session as neutral JSONL (export and read back);
//! - `markdown`: the session as a Markdown handoff document.

mod counts;
pub mod files;
mod ids;
pub mod markdown;
mod meta;
pub mod neutral;
mod session;
mod state;
mod summary;
mod tools;

pub use counts::SessionCounts;
pub use ids::{IdSet, id_hash, keyed_hash};
pub use meta::Meta;
pub use session::*;
pub use state::{MaskedCounts, MessageKind, OutputState};
pub use summary::{RecordedUsage, RelaySource, Summary, named_for};
#[cfg(test)]
pub use tools::test_call;
pub use tools::{ToolKind, first_str, generic_key_arg, status_line, todo_list};
