//! The watch cache's event window: the most recent events, bounded by upstream's capacity
//! policy (`watch_cache.go` `resizeCacheLocked`), and the revision below which a watch can no
//! longer be served (a `410 Gone` "too old resource version").
//!
//! Pure: time is passed in, so the policy is tested with literal timelines.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{Event, Revision};

/// Upstream's `DefaultEventFreshDuration`: how much history the window tries to keep.
pub const EVENT_FRESH_DURATION: Duration = Duration::from_secs(75);
/// Upstream's `DefaultLowerBoundCapacity`.
pub const LOWER_BOUND_CAPACITY: usize = 100;
/// Upstream's `DefaultUpperBoundCapacity`.
pub const UPPER_BOUND_CAPACITY: usize = 100 * 1024;

/// The bounded history of events, oldest first.
#[derive(Debug)]
pub struct Window {
    events: VecDeque<(Instant, Arc<Event>)>,
    capacity: usize,
    lower: usize,
    upper: usize,
    fresh: Duration,
    /// Every event with a revision above this one is held.
    floor: Revision,
}

impl Window {
    /// An empty window whose history starts after `floor` (the revision of the initial list),
    /// with upstream's bounds.
    pub fn new(floor: Revision) -> Self {
        Self::with_bounds(
            floor,
            LOWER_BOUND_CAPACITY,
            UPPER_BOUND_CAPACITY,
            EVENT_FRESH_DURATION,
        )
    }

    /// An empty window with explicit bounds (tests use small ones).
    pub fn with_bounds(floor: Revision, lower: usize, upper: usize, fresh: Duration) -> Self {
        let lower = lower.max(1);
        Window {
            events: VecDeque::new(),
            capacity: lower,
            lower,
            upper: upper.max(lower),
            fresh,
            floor,
        }
    }

    /// The current capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many events are held.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event is held.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The revision every held history starts after: a watch from below it is too old.
    pub fn floor(&self) -> Revision {
        self.floor
    }

    /// Appends an event recorded at `now`, resizing first as upstream does and evicting the
    /// oldest event when full.
    pub fn push(&mut self, now: Instant, event: Arc<Event>) {
        self.resize(now);
        if self.events.len() >= self.capacity
            && let Some((_, old)) = self.events.pop_front()
        {
            self.floor = self.floor.max(old.revision());
        }
        self.events.push_back((now, event));
    }

    /// Upstream's `resizeCacheLocked`: a full window whose oldest event is still fresh doubles
    /// (up to the upper bound); a full window whose event a quarter from the end is stale
    /// halves (down to the lower bound).
    fn resize(&mut self, now: Instant) {
        if self.events.len() < self.capacity {
            return;
        }
        let oldest = self.events.front().map(|(t, _)| *t);
        if let Some(t) = oldest
            && now.saturating_duration_since(t) < self.fresh
        {
            self.capacity = (self.capacity * 2).min(self.upper);
            return;
        }
        // Upstream's `(endIndex - capacity/4) % capacity`: a quarter from the end, or the oldest.
        let quarter = (self.events.len() - self.capacity / 4) % self.events.len();
        if let Some((t, _)) = self.events.get(quarter)
            && now.saturating_duration_since(*t) > self.fresh
        {
            let capacity = (self.capacity / 2).max(self.lower);
            while self.events.len() > capacity {
                if let Some((_, old)) = self.events.pop_front() {
                    self.floor = self.floor.max(old.revision());
                }
            }
            self.capacity = capacity;
        }
    }

    /// Forgets events at or below `revision` (compaction).
    pub fn forget_through(&mut self, revision: Revision) {
        while let Some((_, e)) = self.events.front() {
            if e.revision() > revision {
                break;
            }
            self.events.pop_front();
        }
        self.floor = self.floor.max(revision);
    }

    /// The events after `after`, oldest first, or `Err(floor)` when some of them are gone.
    pub fn since(&self, after: Revision) -> Result<Vec<Arc<Event>>, Revision> {
        if after < self.floor {
            return Err(self.floor);
        }
        let start = self.events.partition_point(|(_, e)| e.revision() <= after);
        Ok(self.events.range(start..).map(|(_, e)| e.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeyValue;
    use bytes::Bytes;

    fn ev(rev: Revision) -> Arc<Event> {
        Arc::new(Event::Put {
            kv: KeyValue {
                key: format!("/k/{rev}"),
                value: Bytes::new(),
                create_revision: rev,
                mod_revision: rev,
                decoded: crate::Decoded::default(),
            },
            prev: None,
        })
    }

    fn revs(events: &[Arc<Event>]) -> Vec<Revision> {
        events.iter().map(|e| e.revision()).collect()
    }

    /// (name, seconds after start of each pushed event, expected capacity, floor, held revisions)
    type Case<'a> = (&'a str, &'a [u64], usize, Revision, &'a [Revision]);

    #[test]
    fn capacity_follows_upstream_policy() {
        let fresh = Duration::from_secs(75);
        let cases: &[Case<'_>] = &[
            ("below capacity nothing changes", &[0, 1], 2, 10, &[11, 12]),
            (
                "full and fresh: doubles instead of evicting",
                &[0, 1, 2],
                4,
                10,
                &[11, 12, 13],
            ),
            (
                "doubling stops at the upper bound, then the oldest goes",
                &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                8,
                12,
                &[13, 14, 15, 16, 17, 18, 19, 20],
            ),
            (
                "full with stale events: halves, evicting the oldest",
                &[0, 0, 0, 0, 100],
                2,
                13,
                &[14, 15],
            ),
            (
                "full, oldest stale but the last quarter fresh: evicts one",
                &[0, 0, 0, 70, 100],
                4,
                11,
                &[12, 13, 14, 15],
            ),
        ];
        for (name, times, capacity, floor, held) in cases {
            let start = Instant::now();
            let mut w = Window::with_bounds(10, 2, 8, fresh);
            for (i, t) in times.iter().enumerate() {
                w.push(start + Duration::from_secs(*t), ev(11 + i as Revision));
            }
            assert_eq!(w.capacity(), *capacity, "{name}: capacity");
            assert_eq!(w.floor(), *floor, "{name}: floor");
            assert_eq!(revs(&w.since(w.floor()).unwrap()), *held, "{name}: events");
        }
    }

    #[test]
    fn since_answers_history_or_the_floor() {
        let start = Instant::now();
        let mut w = Window::with_bounds(10, 2, 2, Duration::from_secs(75));
        for r in 11..=14 {
            w.push(start, ev(r));
        }
        // Events 11 and 12 were evicted: watching from 11 needs 12, which is gone.
        assert_eq!(w.floor(), 12);
        assert_eq!(w.since(11).unwrap_err(), 12);
        assert_eq!(revs(&w.since(12).unwrap()), [13, 14]);
        assert_eq!(revs(&w.since(13).unwrap()), [14]);
        assert!(w.since(14).unwrap().is_empty());
        assert!(w.since(99).unwrap().is_empty(), "future: nothing yet");
        w.forget_through(13);
        assert_eq!(w.floor(), 13);
        assert_eq!(w.since(12).unwrap_err(), 13);
        assert_eq!(revs(&w.since(13).unwrap()), [14]);
    }
}
