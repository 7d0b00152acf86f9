//! The collector's work queue (client-go's rate-limited workqueue, reduced to what the collector
//! needs): an item queued twice runs once; an item added while it runs runs again afterwards,
//! never twice at once; a failed item comes back after an exponential backoff
//! ([`INITIAL_RETRY`] to [`MAX_RETRY`]), a succeeded one forgets its failures.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use tokio::time::Instant;

use super::Work;
use crate::controllers::{INITIAL_RETRY, MAX_RETRY};

/// The queue. See the module documentation.
#[derive(Debug, Default)]
pub struct Queue {
    ready: VecDeque<Work>,
    queued: HashSet<Work>,
    processing: HashSet<Work>,
    /// Added while processing: queued again when done.
    dirty: HashSet<Work>,
    delayed: BTreeMap<(Instant, u64), Work>,
    failures: HashMap<Work, u32>,
    seq: u64,
}

impl Queue {
    /// Queues an item (once).
    pub fn add(&mut self, work: Work) {
        if self.processing.contains(&work) {
            self.dirty.insert(work);
        } else if self.queued.insert(work.clone()) {
            self.ready.push_back(work);
        }
    }

    /// Queues every item.
    pub fn extend(&mut self, work: impl IntoIterator<Item = Work>) {
        for w in work {
            self.add(w);
        }
    }

    /// Takes the next ready item; it counts as processing until [`Queue::done`].
    pub fn pop(&mut self) -> Option<Work> {
        let work = self.ready.pop_front()?;
        self.queued.remove(&work);
        self.processing.insert(work.clone());
        Some(work)
    }

    /// Ends the processing of an item: on failure it comes back after its backoff.
    pub fn done(&mut self, work: &Work, ok: bool) {
        self.processing.remove(work);
        if ok {
            self.failures.remove(work);
        } else {
            let n = self.failures.entry(work.clone()).or_default();
            let wait = INITIAL_RETRY
                .saturating_mul(1 << (*n).min(16))
                .min(MAX_RETRY);
            *n += 1;
            self.seq += 1;
            self.delayed
                .insert((Instant::now() + wait, self.seq), work.clone());
        }
        if self.dirty.remove(work) {
            self.add(work.clone());
        }
    }

    /// When the next delayed item is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.delayed.keys().next().map(|(at, _)| *at)
    }

    /// Queues the delayed items that are due.
    pub fn promote(&mut self) {
        let now = Instant::now();
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let work = entry.remove();
            self.add(work);
        }
    }

    /// How many items wait (ready or delayed).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.ready.len() + self.delayed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(uid: &str) -> Work {
        Work::Attempt(uid.into())
    }

    #[tokio::test]
    async fn dedupes_reruns_dirty_items_and_backs_off_failures() {
        let mut q = Queue::default();
        q.extend([a("x"), a("y"), a("x")]);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(), Some(a("x")));
        // Added while running: not handed out twice at once, queued again when done.
        q.add(a("x"));
        assert_eq!(q.pop(), Some(a("y")));
        assert_eq!(q.pop(), None);
        q.done(&a("x"), true);
        assert_eq!(q.pop(), Some(a("x")));
        q.done(&a("x"), false);
        assert_eq!(q.pop(), None);
        let due = q.next_due().unwrap();
        q.promote();
        assert_eq!(q.pop(), None, "not due yet");
        tokio::time::sleep_until(due).await;
        q.promote();
        assert_eq!(q.pop(), Some(a("x")));
        q.done(&a("x"), false);
        assert!(
            q.next_due().unwrap() - Instant::now() > INITIAL_RETRY,
            "the second wait doubles"
        );
        q.done(&a("y"), true);
        assert_eq!(q.len(), 1);
    }
}
