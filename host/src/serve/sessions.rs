//! One session's events one at a time, in the order they arrived.
//!
//! The server takes each event's turn in its session here, before a thread
//! judges it: events of one session wait in a queue of the server's own, as
//! long as their connection waits, instead of each holding a thread while it
//! waits out the session's file lock (whose timeout would then judge the last
//! of a burst without its state). The file lock is still taken while judging,
//! for the `sandrail hook` processes on the same state.
//!
//! A turn lasts past the event's answer, until its state is committed and its
//! receipt written; what that could not save is kept with the session's queue
//! for its next event ([`Owed`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OwnedMutexGuard;

use crate::hook::Owed;

/// A session's queue, holding what its last event owes the next.
type Queue = Arc<tokio::sync::Mutex<Owed>>;

/// The queue of each session with an event being judged or waiting, or with
/// something owed to its next event.
#[derive(Default)]
pub struct Sessions(Mutex<HashMap<String, Queue>>);

/// A session's turn: its other events wait until this is dropped.
pub struct Turn {
    sessions: Arc<Sessions>,
    session: String,
    guard: Option<OwnedMutexGuard<Owed>>,
}

impl Turn {
    /// What the session's previous event owes this one, taken.
    pub fn take_owed(&mut self) -> Owed {
        self.guard
            .as_deref_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Leaves `owed` for the session's next event.
    pub fn owe(&mut self, owed: Owed) {
        if let Some(guard) = self.guard.as_deref_mut() {
            *guard = owed;
        }
    }
}

impl Sessions {
    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<String, Queue>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for `session`'s turn (first come, first served).
    pub async fn turn(self: &Arc<Self>, session: &str) -> Turn {
        let queue = Arc::clone(self.queues().entry(session.to_owned()).or_default());
        let guard = queue.lock_owned().await;
        Turn {
            sessions: Arc::clone(self),
            session: session.to_owned(),
            guard: Some(guard),
        }
    }

    /// How many sessions have a queue now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.queues().len()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut queues = self.sessions.queues();
        // Let go first; then a queue nobody else holds or waits in, owed
        // nothing, is removed (while the map is locked no one can join it).
        let owes = self.guard.as_deref().is_some_and(|owed| !owed.is_empty());
        drop(self.guard.take());
        if !owes
            && queues
                .get(&self.session)
                .is_some_and(|queue| Arc::strong_count(queue) == 1)
        {
            queues.remove(&self.session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_session_s_events_take_turns_and_queues_go_away() {
        let sessions = Arc::new(Sessions::default());
        let first = sessions.turn("a").await;
        let other = sessions.turn("b").await;
        let second = {
            let sessions = Arc::clone(&sessions);
            tokio::spawn(async move { sessions.turn("a").await })
        };
        tokio::task::yield_now().await;
        assert!(!second.is_finished(), "waits for the first");
        drop(first);
        let second = second.await.expect("task");
        drop((second, other));
        assert_eq!(sessions.len(), 0);
    }
}
