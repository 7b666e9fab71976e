//! The agents session-relay knows, one folder each. Adding an agent means adding its folder,
//! one `mod` line and one registry entry here, and its fixtures.

use crate::adapter::Adapter;

pub mod claude;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod opencode;
pub mod pi;
pub mod qwen;

static REGISTRY: &[&dyn Adapter] = &[
    &claude::ADAPTER,
    &codex::ADAPTER,
    &gemini::ADAPTER,
    &copilot::ADAPTER,
    &qwen::ADAPTER,
    &pi::ADAPTER,
    &opencode::ADAPTER,
];

/// Every adapter, in a stable order.
pub fn registry() -> &'static [&'static dyn Adapter] {
    REGISTRY
}

/// The adapter called `name` (`claude`, `codex`, `gemini`).
pub fn by_name(name: &str) -> Option<&'static dyn Adapter> {
    registry().iter().copied().find(|a| a.name() == name)
}

/// Every agent's short name, in registry order.
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|a| a.name()).collect()
}

/// An agent's product name for messages, also for agents this build does not know.
pub fn display_name(name: &str) -> &'static str {
    by_name(name).map_or("an unknown agent", |a| a.display_name())
}
