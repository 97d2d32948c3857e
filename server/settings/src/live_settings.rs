//! The settings in force: one value the harness and every session's hooks read at each use, and
//! that a settings change (the editor's `didChangeConfiguration`, `reins.model.set`) replaces
//! whole, so a change applies from the next tool call, turn or run, never halfway through one.
//! Whoever builds a harness makes the handle and may keep a clone to read; only the harness
//! writes it.

use std::sync::{Arc, PoisonError, RwLock};

use crate::Settings;

#[derive(Clone)]
pub struct LiveSettings(Arc<RwLock<Arc<Settings>>>);

impl LiveSettings {
    pub fn new(settings: Settings) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(settings))))
    }

    /// The settings in force now.
    pub fn get(&self) -> Arc<Settings> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Puts `settings` in force; answers them. The harness is the one caller (see the module's
    /// first lines).
    pub fn set(&self, settings: Settings) -> Arc<Settings> {
        let settings = Arc::new(settings);
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = settings.clone();
        settings
    }
}
