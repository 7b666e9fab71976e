//! The agents session-relay knows, one folder each. Adding an agent means adding its folder,
//! one `mod` line and one registry entry here, and its fixtures.

use crate::adapter::Adapter;

pub mod claude;
pub mod codex;

static REGISTRY: &[&dyn Adapter] = &[&claude::ADAPTER, &codex::ADAPTER];

/// Every adapter, in a stable order.
pub fn registry() -> &'static [&'static dyn Adapter] {
    REGISTRY
}
