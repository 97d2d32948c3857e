//! The one lock helper of reins: a mutex poisoned by a panic elsewhere still guards usable data
//! (every value behind these locks is whole between statements), so a panic in one run or task
//! never takes the others down with it.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`; a panic elsewhere while it was held leaves data that is still usable here.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
