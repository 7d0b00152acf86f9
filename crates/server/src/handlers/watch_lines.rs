//! Encoded watch lines shared by every watcher of one event: the decode (and conversion) and
//! the JSON encoding of an event's object are done once per event and output form, not once per
//! watcher, as upstream's watch cache wraps objects in a `cachingObject` whose serializations
//! are shared by all watchers. With 200 watchers of a resource, each write would otherwise cost
//! 200 decodes, conversions and encodings, and that CPU is taken from the writes.
//!
//! A line is reused only for the same strategy (the served version and its schema: held here,
//! so a replaced strategy is never mistaken for a new one at the same address), output form,
//! event type, key and revision. Lines are kept for the last [`CAPACITY`] events, first in first
//! out; a watcher further behind encodes for itself.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex};

use bytes::Bytes;
use tokio::sync::OnceCell;

use super::watch::EventType;
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
}

static LINES: LazyLock<Mutex<Lines>> = LazyLock::new(Mutex::default);

/// The encoded line of an event for `strategy` in `output`: the shared one when another
/// watcher encoded it already (or is encoding it now: this waits for it), else `encode`'s, which
/// is then shared. An error is not shared: the next watcher tries again.
pub async fn shared_line<F, Fut>(
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
        let mut lines = LINES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
