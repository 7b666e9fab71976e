//! A long Gemini CLI session read with its older turns folded (`ReadOptions::fold`), so that
//! `show`, a plain `export` and a relay hold only its newest turns.
//!
//! A message is not final where it is first written: the CLI writes a gemini message again
//! with its tool calls, a `$set.messages` replaces the whole list, a `$rewindTo` drops the end.
//! So a first pass (`places`) applies the records to where each message lies, as the listing
//! reads them (no tool output unescaped, nothing kept but ids), and finds each message's last
//! version. The read then converts each message when it meets that version, in the
//! conversation's order: only messages whose earlier neighbours' last version is still ahead
//! are held, and the fold window lets whole turns go.
//!
//! The read applies the records again as it parses them; if what it finds is not what the
//! first pass found (a line the listing's parse reads otherwise, one too long for it), the fold
//! is marked broken and the caller reads the session again in full.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde_json::{Map, Value};

use super::convert::{Convert, convert};
use super::long::List;
use super::records::{Conversation, Record};
use crate::adapter::{Fold, FoldWindow};
use crate::jsonl::str_field;
use crate::model::Session;

pub use super::records::Place;

/// The progress step of `places`, before the file's name (the read follows as `reading`).
const PLACES_STEP: &str = "finding the last versions in";

/// What the first pass found.
pub struct Places {
    /// The conversation's messages in order, each with the place of its last version.
    order: Vec<(String, Place)>,
    /// The long lines (`super::long`) that are a list of messages, by line: the read streams
    /// them without reading them once more first.
    lists: foldhash::HashMap<usize, List>,
}

/// The conversation's messages in order, each with the place of its last version. Lines are
/// parsed on every core, from the same text of each line as the reader parses.
pub fn places(path: &Path) -> Result<Places> {
    let mut conv: Conversation<Place> = Conversation::default();
    let mut lists = foldhash::HashMap::default();
    crate::jsonl::for_each_line(
        path,
        crate::jsonl::Pass {
            step: Some(PLACES_STEP),
            stream_long: true,
            ..Default::default()
        },
        |no, text| Some(super::scan::light_record(text).map(|r| r.placed(no))),
        |_, _| None,
        |no, line| {
            match line {
                crate::jsonl::Line::Json(Some(r)) => conv.apply(r),
                crate::jsonl::Line::Long { start, len, .. } => {
                    if let Some((r, repeated)) =
                        super::scan::light_long(super::long::line(path, start, len)?)
                    {
                        if let Some(list) = super::long::list_of(&r, repeated) {
                            lists.insert(no, list);
                        }
                        conv.apply(r.placed(no));
                    }
                }
                _ => {}
            }
            Ok(())
        },
    )?;
    Ok(Places {
        order: conv.into_entries(),
        lists,
    })
}

/// The first and last message times.
pub type Times = (Option<String>, Option<String>);

/// The read's side: messages converted in order as their last versions are met.
pub struct Folding {
    places: Vec<(String, Place)>,
    lists: foldhash::HashMap<usize, List>,
    wanted: foldhash::HashMap<Place, usize>,
    /// Last versions met before an earlier message's: by place in the conversation.
    held: BTreeMap<usize, (Value, usize)>,
    /// The next message of the conversation to convert.
    next: usize,
    /// The records as this read applies them, to check the first pass against.
    seen: Conversation<Place>,
    /// A last version was not where the first pass put it.
    astray: bool,
    window: FoldWindow,
    state: Convert,
    /// The first and last message times, as `times` takes them.
    first_time: Option<String>,
    last_time: Option<String>,
}

impl Folding {
    pub fn new(found: Places, fold: &Fold) -> Folding {
        let Places {
            order: places,
            lists,
        } = found;
        let wanted = places
            .iter()
            .enumerate()
            .map(|(i, (_, p))| (*p, i))
            .collect();
        Folding {
            places,
            lists,
            wanted,
            held: BTreeMap::new(),
            next: 0,
            seen: Conversation::default(),
            astray: false,
            window: FoldWindow::new(fold),
            state: Convert::default(),
            first_time: None,
            last_time: None,
        }
    }

    /// Takes one record of line `no`, and converts what it makes ready.
    pub fn apply(&mut self, r: Record<(Value, usize)>, no: usize, session: &mut Session) {
        let placed = match r {
            Record::Message(id, (v, line)) => {
                self.offer(&id, (no, None), v, line);
                Record::Message(id, (no, None))
            }
            Record::Set { meta, messages } => Record::Set {
                meta,
                messages: self.offer_list(messages, no),
            },
            Record::Meta { meta, messages } => Record::Meta {
                meta,
                messages: self.offer_list(messages, no),
            },
            Record::Rewind(id) => Record::Rewind(id),
            Record::Other => Record::Other,
        };
        self.seen.apply(placed);
        self.convert_ready(session);
    }

    /// What the first pass found long line `no` to be, if a list of messages: its record is
    /// known, and it was read whole once, so its list can be streamed straight away.
    pub fn long_list(&self, no: usize) -> Option<List> {
        self.lists.get(&no).copied()
    }

    /// Takes one message of the list of a long line `no` (`super::long`): its `k`th with an
    /// id. `listed` then takes the record, its messages by place.
    pub fn offer_listed(&mut self, id: &str, no: usize, k: usize, v: Value, session: &mut Session) {
        self.offer(id, (no, Some(k)), v, no);
        self.convert_ready(session);
    }

    /// Takes a long line's record, after its messages (`offer_listed`).
    pub fn listed(&mut self, placed: Record<Place>) {
        self.seen.apply(placed);
    }

    /// Converts the messages whose last versions were all met, in order.
    fn convert_ready(&mut self, session: &mut Session) {
        while let Some((v, line)) = self.held.remove(&self.next) {
            if let Some(t) = str_field(&v, "timestamp").filter(|t| !t.is_empty()) {
                if self.first_time.is_none() {
                    self.first_time = Some(t.to_string());
                }
                self.last_time = Some(t.to_string());
            }
            convert(&v, line, session, &mut self.state);
            drop(v);
            self.next += 1;
            self.window.after_messages(session);
        }
    }

    fn offer_list(
        &mut self,
        list: Option<Vec<(String, (Value, usize))>>,
        no: usize,
    ) -> Option<Vec<(String, Place)>> {
        let list = list?;
        let mut placed = Vec::with_capacity(list.len());
        for (k, (id, (v, line))) in list.into_iter().enumerate() {
            self.offer(&id, (no, Some(k)), v, line);
            placed.push((id, (no, Some(k))));
        }
        Some(placed)
    }

    fn offer(&mut self, id: &str, place: Place, v: Value, line: usize) {
        if let Some(&i) = self.wanted.get(&place) {
            if self.places[i].0 == id && i >= self.next {
                self.held.insert(i, (v, line));
            } else {
                self.astray = true;
            }
        }
    }

    /// The merged metadata, the conversion's state and the first and last message times; the
    /// fold is marked broken when this read did not find what the first pass found.
    pub fn finish(self, session: &mut Session) -> (Map<String, Value>, Convert, Times) {
        let found = self.seen.entries();
        let same = !self.astray
            && self.held.is_empty()
            && self.next == self.places.len()
            && found.len() == self.places.len()
            && found.iter().zip(&self.places).all(|(a, b)| a == b);
        if !same {
            session.folded.get_or_insert_default().broken = true;
        }
        (
            self.seen.meta,
            self.state,
            (self.first_time, self.last_time),
        )
    }
}
