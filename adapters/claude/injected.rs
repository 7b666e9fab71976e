//! The texts Claude Code writes into user lines itself (commands, reminders, notifications,
//! interruptions), which are not the person's words, and the escape the writer puts before a
//! person's words that start as those do. The reader, the listing scan and the writer all ask.

use crate::model::MessageKind;

/// Put before a person's words that start as Claude Code's own texts do (`<system-reminder>`,
/// `<command-name>`): Claude Code would take them for its own, and show them as a command or
/// not at all. The reader takes it off again (`unescaped`).
pub(crate) const ESCAPE: &str = "(relayed) ";

/// A person's words with `ESCAPE` taken off, when the writer put it there.
pub(crate) fn unescaped(text: &str) -> Option<&str> {
    text.strip_prefix(ESCAPE)
        .filter(|rest| injected_kind(rest, false, false).is_some())
}

/// What a user line's text is when Claude Code wrote it rather than the person (`None`: the
/// person's own words). The listing scanner counts messages with it too.
pub(crate) fn injected_kind(text: &str, meta: bool, compact_summary: bool) -> Option<MessageKind> {
    let t = text.trim_start();
    if compact_summary {
        Some(MessageKind::CompactSummary)
    } else if meta {
        Some(MessageKind::Context)
    } else if t.starts_with("<command-name>")
        || t.starts_with("<command-message>")
        || t.starts_with("<local-command-stdout>")
        || t.starts_with("<local-command-stderr>")
        || t.starts_with("<local-command-caveat>")
    {
        Some(MessageKind::Command)
    } else if t.starts_with("<task-notification>") {
        Some(MessageKind::TaskNotification)
    } else if t.starts_with("[Request interrupted by user") {
        Some(MessageKind::Interruption)
    } else if t.starts_with("<system-reminder>") {
        Some(MessageKind::Context)
    } else {
        None
    }
}
