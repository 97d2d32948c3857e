//! A budget shared by a family of runs: a parent run and the subagents it spawns draw from one
//! sum, so three children running at once cannot each spend what the parent had left — in
//! dollars, and in turns.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

/// US dollars a family of runs may still spend, and the model calls it made. Each run adds what
/// its model calls cost, and checks before each call what is left after every member's calls so
/// far; its turn limit counts every member's calls too.
#[derive(Debug)]
pub struct SharedBudget {
    limit: f64,
    spent: Mutex<f64>,
    turns: AtomicU32,
}

impl SharedBudget {
    /// A budget of `limit` dollars (`f64::INFINITY`: turns only).
    pub fn new(limit: f64) -> Self {
        Self { limit, spent: Mutex::new(0.0), turns: AtomicU32::new(0) }
    }

    /// Adds the cost of one model call, and the call to the family's turns.
    pub fn spend(&self, cost: f64) {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner) += cost;
        self.turns.fetch_add(1, Ordering::Relaxed);
    }

    /// The model calls the family made so far.
    pub fn turns(&self) -> u32 {
        self.turns.load(Ordering::Relaxed)
    }

    /// What is left of the limit (negative once overspent).
    pub fn left(&self) -> f64 {
        self.limit - self.spent()
    }

    /// What the family has spent so far.
    pub fn spent(&self) -> f64 {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_draws_from_one_sum() {
        let budget = SharedBudget::new(1.0);
        budget.spend(0.25);
        budget.spend(0.5);
        assert_eq!((budget.spent(), budget.left(), budget.turns()), (0.75, 0.25, 2));
    }
}
