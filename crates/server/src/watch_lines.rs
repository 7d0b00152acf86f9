//! Encoded watch lines shared by every watcher of one event: the decode (and conversion) and
//! the JSON encoding of an event's object are done once per event and output form, not once per
//! watcher, as upstream's watch cache wraps objects in a `cachingObject` whose serializations
//! are shared by all watchers. With 200 watchers of a resource, each write would otherwise cost
//! 200 decodes, conversions and encodings, and that CPU is taken from the writes.
//!
//! A line is reused only for the same strategy (the served version and its schema: held here,
//! so a replaced strategy is never mistaken for a new one at the same address), output form,
//! event type, key and revision. Lines are kept for the last [`CAPACITY`] events, first in first
//! out; a watcher further behind encodes for itself. Lines serve watchers only: when the last
//! watcher of a server goes ([`Watching`] dropped), its lines go too, so a server whose watchers
//! all closed does not keep up to [`CAPACITY`] encoded objects for good.
//!
//! The table belongs to one server (`AppState::watch_lines`), not to the
//! process: servers started side by side in one process (the test harness starts many) neither
//! share lines nor evict each other's.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::OnceCell;

use crate::error::ApiError;
use crate::registry::Strategy;
use crate::request::negotiate::Output;

/// How many encoded lines are kept (about 1.3 KB each for 1 KiB objects).
pub const CAPACITY: usize = 1024;

/// What identifies one encoded line.
#[derive(Clone, PartialEq, Eq, Hash)]
struct LineKey {
    strategy: usize,
    output: u8,
    kind: u8,
    revision: i64,
    key: String,
}

struct Slot {
    /// Keeps the strategy alive while its address is part of a key.
    _strategy: Arc<dyn Strategy>,
    line: Arc<OnceCell<Bytes>>,
}

#[derive(Default)]
struct Lines {
    slots: HashMap<LineKey, Slot>,
    order: VecDeque<LineKey>,
    /// Live [`Watching`] holds.
    watchers: usize,
}

/// One server's encoded watch lines, shared by its watchers so an event is encoded once per
/// strategy and output form rather than once per watcher.
#[derive(Default)]
pub struct WatchLines {
    lines: Mutex<Lines>,
}

impl WatchLines {
    /// How many lines are held now (at most [`CAPACITY`]).
    pub fn len(&self) -> usize {
        self.lock().slots.len()
    }

    /// Whether no line is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A watcher's hold on the table, for as long as it streams: the lines are kept while any
    /// hold is alive and dropped with the last one.
    pub fn watching(self: &Arc<Self>) -> Watching {
        self.lock().watchers += 1;
        Watching {
            lines: self.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lines> {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The encoded line of an event for `strategy` in `output`: the shared one when another
    /// watcher encoded it already (or is encoding it now: this waits for it), else `encode`'s, which
    /// is then shared. An error is not shared: the next watcher tries again.
    pub async fn shared_line<F, Fut>(
        &self,
        strategy: &Arc<dyn Strategy>,
        output: Output,
        kind: EventType,
        key: &str,
        revision: i64,
        encode: F,
    ) -> Result<Bytes, ApiError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Bytes, ApiError>>,
    {
        let id = LineKey {
            strategy: Arc::as_ptr(strategy).cast::<()>() as usize,
            output: output as u8,
            kind: kind as u8,
            revision,
            key: key.to_string(),
        };
        let cell = {
            let mut lines = self.lock();
            if let Some(slot) = lines.slots.get(&id) {
                slot.line.clone()
            } else {
                let cell = Arc::new(OnceCell::new());
                if lines.order.len() >= CAPACITY
                    && let Some(old) = lines.order.pop_front()
                {
                    lines.slots.remove(&old);
                }
                lines.order.push_back(id.clone());
                lines.slots.insert(
                    id,
                    Slot {
                        _strategy: strategy.clone(),
                        line: cell.clone(),
                    },
                );
                cell
            }
        };
        cell.get_or_try_init(encode).await.cloned()
    }
}

/// One watcher's hold on its server's [`WatchLines`] (`WatchLines::watching`): the lines are
/// shared through it, and dropping the last hold drops every line (and the table's capacity),
/// since no watcher is left to reuse them.
pub struct Watching {
    lines: Arc<WatchLines>,
}

impl std::ops::Deref for Watching {
    type Target = WatchLines;

    fn deref(&self) -> &WatchLines {
        &self.lines
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut lines = self.lines.lock();
        lines.watchers = lines.watchers.saturating_sub(1);
        if lines.watchers == 0 {
            lines.slots = HashMap::new();
            lines.order = VecDeque::new();
        }
    }
}

/// The type of a watch event, as `metav1.WatchEvent` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// An object appeared (or started matching the selectors).
    Added,
    /// An object changed.
    Modified,
    /// An object went (or stopped matching the selectors).
    Deleted,
    /// A revision marker with no object change.
    Bookmark,
    /// The watch ended with a Status.
    Error,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::namespaces::NamespaceStrategy;

    fn strategy() -> Arc<dyn Strategy> {
        Arc::new(NamespaceStrategy::default())
    }

    /// Asks `lines` for the line of `key` at `revision`, encoding `fresh` if it is not there.
    async fn line(
        lines: &WatchLines,
        s: &Arc<dyn Strategy>,
        key: &str,
        revision: i64,
        fresh: &str,
    ) -> Bytes {
        let fresh = Bytes::from(fresh.to_string());
        lines
            .shared_line(
                s,
                Output::Json,
                EventType::Modified,
                key,
                revision,
                || async { Ok(fresh) },
            )
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn watchers_of_one_server_share_an_events_line() {
        let lines = WatchLines::default();
        let s = strategy();
        assert_eq!(line(&lines, &s, "/a", 5, "first").await, "first");
        assert_eq!(line(&lines, &s, "/a", 5, "second").await, "first");
        // Another revision, key or strategy is another line.
        assert_eq!(line(&lines, &s, "/a", 6, "third").await, "third");
        assert_eq!(line(&lines, &s, "/b", 5, "fourth").await, "fourth");
        assert_eq!(line(&lines, &strategy(), "/a", 5, "fifth").await, "fifth");
        assert_eq!(lines.len(), 4);
    }

    /// Two servers in one process: the same strategy, key and revision (a fresh server's
    /// revisions start alike) never get the other server's line, and one server's traffic
    /// does not evict the other's lines.
    #[tokio::test]
    async fn two_servers_never_share_or_evict_each_others_lines() {
        let (one, two) = (WatchLines::default(), WatchLines::default());
        let s = strategy();
        assert_eq!(line(&one, &s, "/a", 5, "server one").await, "server one");
        assert_eq!(line(&two, &s, "/a", 5, "server two").await, "server two");
        for revision in 0..CAPACITY as i64 + 10 {
            line(&two, &s, "/b", 100 + revision, "busy").await;
        }
        assert_eq!(two.len(), CAPACITY);
        assert_eq!(one.len(), 1);
        assert_eq!(line(&one, &s, "/a", 5, "evicted").await, "server one");
    }

    /// Lines stay while any watcher holds the table and go with the last one: a server whose
    /// watchers all closed keeps no encoded objects (issue 19, "memory returns").
    #[tokio::test]
    async fn lines_go_when_the_last_watcher_goes() {
        let lines = Arc::new(WatchLines::default());
        let s = strategy();
        let (one, two) = (lines.watching(), lines.watching());
        assert_eq!(line(&one, &s, "/a", 5, "first").await, "first");
        assert_eq!(line(&two, &s, "/b", 5, "second").await, "second");
        drop(one);
        assert_eq!(lines.len(), 2, "a watcher is still there");
        assert_eq!(line(&two, &s, "/a", 5, "again").await, "first");
        drop(two);
        assert!(lines.is_empty(), "the last watcher went");
        // A new watcher starts from an empty table and encodes afresh.
        let three = lines.watching();
        assert_eq!(line(&three, &s, "/a", 5, "fresh").await, "fresh");
        assert_eq!(lines.len(), 1);
    }

    #[tokio::test]
    async fn a_failed_encoding_is_not_shared() {
        let lines = WatchLines::default();
        let s = strategy();
        let failed = lines
            .shared_line(&s, Output::Json, EventType::Modified, "/a", 1, || async {
                Err(ApiError::from(crd_core::Status::internal("no")))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(line(&lines, &s, "/a", 1, "retried").await, "retried");
    }
}
