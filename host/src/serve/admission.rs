//! Who is served when: a connection waits its turn rather than being refused.
//!
//! Each connection accepted waits for two places before its request is read:
//! one of its user's share ([`PER_USER_SHARE`] of one user's connections are
//! served at once on the Unix socket, by its peer credentials, so one user's
//! flood never takes another user's turn), then one of the server's
//! ([`MAX_SERVED`]). A connection that has waited [`SEAT_WAIT`] for them is
//! closed: the forwarding hook's own deadline is longer, and it then judges
//! locally or, where the server is required, refuses. Only a user already
//! holding [`MAX_OPEN_PER_USER`] connections is closed at once, a flood guard
//! far beyond what any harness starts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most connections served at once; with the payload limit, this bounds
/// what bodies being read can hold.
pub const MAX_SERVED: usize = 256;

/// The most of one user's connections served at once on the Unix socket.
pub const PER_USER_SHARE: usize = 32;

/// The most connections one user may hold open, waiting or served.
pub const MAX_OPEN_PER_USER: usize = 1024;

/// How long a connection waits for its places: shorter than the forwarding
/// hook's deadline ([`crate::forward::DEADLINE`]), so the hook hears of it in
/// time to judge locally or refuse.
pub const SEAT_WAIT: Duration = Duration::from_secs(25);

/// The server's places and each user's share.
pub struct Admission {
    served: Arc<Semaphore>,
    users: Mutex<HashMap<u32, User>>,
}

struct User {
    share: Arc<Semaphore>,
    open: usize,
    /// Whether its last connection was closed by the flood guard (said once,
    /// not per connection).
    closed: bool,
}

/// An accepted connection, counted against its user until dropped.
pub struct Ticket {
    admission: Arc<Admission>,
    /// The user, and that user's share; none over TCP, whose peer has no uid.
    user: Option<(u32, Arc<Semaphore>)>,
}

/// The places a connection is served in; given back when dropped.
pub struct Places {
    _share: Option<OwnedSemaphorePermit>,
    _served: OwnedSemaphorePermit,
}

impl Admission {
    pub fn new() -> Arc<Admission> {
        Arc::new(Admission {
            served: Arc::new(Semaphore::new(MAX_SERVED)),
            users: Mutex::new(HashMap::new()),
        })
    }

    fn users(&self) -> std::sync::MutexGuard<'_, HashMap<u32, User>> {
        self.users.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection just accepted from `uid` (`None` over TCP): its ticket, or
    /// `None` when its user already holds [`MAX_OPEN_PER_USER`].
    pub fn arrive(self: &Arc<Self>, uid: Option<u32>) -> Option<Ticket> {
        let Some(uid) = uid else {
            return Some(Ticket {
                admission: Arc::clone(self),
                user: None,
            });
        };
        let mut users = self.users();
        let user = users.entry(uid).or_insert_with(|| User {
            share: Arc::new(Semaphore::new(PER_USER_SHARE)),
            open: 0,
            closed: false,
        });
        if user.open >= MAX_OPEN_PER_USER {
            if !user.closed {
                eprintln!(
                    "sandrail: uid {uid} holds {MAX_OPEN_PER_USER} connections; more are closed until some end"
                );
                user.closed = true;
            }
            return None;
        }
        user.open += 1;
        user.closed = false;
        Some(Ticket {
            admission: Arc::clone(self),
            user: Some((uid, Arc::clone(&user.share))),
        })
    }
}

impl Ticket {
    /// Waits for the user's share, then the server's place, within
    /// [`SEAT_WAIT`]; `None` past it (or when the server is closing).
    pub async fn admitted(&self) -> Option<Places> {
        let places = async {
            let share = match &self.user {
                Some((_, share)) => Some(Arc::clone(share).acquire_owned().await.ok()?),
                None => None,
            };
            let served = Arc::clone(&self.admission.served)
                .acquire_owned()
                .await
                .ok()?;
            Some(Places {
                _share: share,
                _served: served,
            })
        };
        tokio::time::timeout(SEAT_WAIT, places).await.ok().flatten()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let Some((uid, _)) = &self.user else {
            return;
        };
        let mut users = self.admission.users();
        if let Some(user) = users.get_mut(uid) {
            user.open = user.open.saturating_sub(1);
            if user.open == 0 {
                users.remove(uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user past its share waits, and is served as one of its connections
    /// ends; another user is served meanwhile.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn past_its_share_a_user_waits_and_others_do_not() {
        let admission = Admission::new();
        let tickets: Vec<Ticket> = (0..PER_USER_SHARE)
            .map(|_| admission.arrive(Some(1)).expect("a ticket"))
            .collect();
        let mut places = Vec::new();
        for ticket in &tickets {
            places.push(ticket.admitted().await.expect("served"));
        }
        let waiting = admission.arrive(Some(1)).expect("a ticket");
        let other = admission.arrive(Some(2)).expect("a ticket");
        assert!(other.admitted().await.is_some(), "another user is served");
        let waited = tokio::spawn(async move { waiting.admitted().await.is_some() });
        tokio::time::sleep(Duration::from_secs(1)).await;
        places.pop();
        assert!(waited.await.expect("task"), "served once a place is free");
    }

    /// A connection that cannot be served within the wait is let go.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_wait_past_the_limit_ends() {
        let admission = Admission::new();
        let tickets: Vec<Ticket> = (0..PER_USER_SHARE)
            .map(|_| admission.arrive(Some(1)).expect("a ticket"))
            .collect();
        let mut places = Vec::new();
        for ticket in &tickets {
            places.push(ticket.admitted().await.expect("served"));
        }
        let late = admission.arrive(Some(1)).expect("a ticket");
        assert!(late.admitted().await.is_none());
    }
}
