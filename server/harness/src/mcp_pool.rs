//! MCP server sets shared across the process: a set built from the same configurations, for the
//! same workspace roots and environment, as one still in use is that one, not a second copy of
//! its processes. `reins acp` builds a harness per session, and a client passes the same
//! `mcpServers` to every `session/new`: without sharing, each session started its own servers
//! and kept them until exit. A shared set lives as long as one harness or session holds it —
//! the last to let go kills its processes (dropping a set does) — and tells its warnings to
//! every harness that joined it while that harness lives.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use reins_mcp::{ServerConfig, Servers};

use crate::mcp_start::Warn;

/// What a set is built from; two sets of equal keys would be the same servers.
#[derive(PartialEq)]
pub(crate) struct PoolKey {
    pub(crate) configs: Vec<ServerConfig>,
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) base_env: Vec<(OsString, OsString)>,
}

/// Where a shared set's warnings go: each harness that joined it, while it lives.
pub(crate) type Listeners = Arc<Mutex<Vec<Weak<dyn Fn(&str) + Send + Sync>>>>;

struct Pooled {
    key: PoolKey,
    servers: Weak<Servers>,
    listeners: Listeners,
}

static POOL: Mutex<Vec<Pooled>> = Mutex::new(Vec::new());

/// The set of `key` still in use, joined by `warn`; else a new one from `build` (given the
/// listeners its warnings go to), pooled.
pub(crate) fn shared(key: PoolKey, warn: &Warn, build: impl FnOnce(Listeners) -> Arc<Servers>) -> Arc<Servers> {
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    pool.retain(|pooled| pooled.servers.strong_count() > 0);
    if let Some(pooled) = pool.iter().find(|pooled| pooled.key == key)
        && let Some(servers) = pooled.servers.upgrade()
    {
        let mut listeners = pooled.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|listener| listener.strong_count() > 0);
        listeners.push(Arc::downgrade(warn));
        return servers;
    }
    let listeners: Listeners = Arc::new(Mutex::new(vec![Arc::downgrade(warn)]));
    let servers = build(listeners.clone());
    pool.push(Pooled { key, servers: Arc::downgrade(&servers), listeners });
    servers
}

/// Tells `message` to every listener still alive.
pub(crate) fn tell(listeners: &Listeners, message: &str) {
    let alive: Vec<Warn> = {
        let listeners = listeners.lock().unwrap_or_else(PoisonError::into_inner);
        listeners.iter().filter_map(Weak::upgrade).collect()
    };
    for warn in alive {
        warn(message);
    }
}

/// Whether others hold `servers` besides the caller: then stopping them is not the caller's
/// to do (they stop when the last holder lets go).
pub(crate) fn held_elsewhere(servers: &Arc<Servers>) -> bool {
    Arc::strong_count(servers) > 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Settings;
    use crate::mcp_start::servers;

    #[test]
    fn the_same_servers_are_shared_while_in_use_and_told_to_every_holder() {
        let settings = Settings::from_env(|_| None);
        let config = || vec![ServerConfig::stdio("files", "mcp-files-for-the-pool-test", vec!["--flag".into()])];
        let roots = vec![PathBuf::from("/pool-test/a")];
        let told: Arc<Mutex<Vec<String>>> = Arc::default();
        let warn = |who: &'static str| -> Warn {
            let told = told.clone();
            Arc::new(move |message: &str| told.lock().unwrap().push(format!("{who}: {message}")))
        };
        let (first_warn, second_warn) = (warn("first"), warn("second"));

        let first = servers(config(), &settings, roots.clone(), first_warn.clone());
        let second = servers(config(), &settings, roots.clone(), second_warn.clone());
        assert!(Arc::ptr_eq(&first, &second), "one set for the same configuration");
        assert!(held_elsewhere(&first));
        let elsewhere = servers(config(), &settings, vec![PathBuf::from("/pool-test/b")], first_warn.clone());
        assert!(!Arc::ptr_eq(&first, &elsewhere), "other roots, other servers");

        let listeners = {
            let pool = POOL.lock().unwrap();
            let pooled = pool.iter().find(|pooled| pooled.servers.upgrade().is_some_and(|s| Arc::ptr_eq(&s, &first)));
            pooled.unwrap().listeners.clone()
        };
        drop(second_warn);
        tell(&listeners, "the server stopped");
        assert_eq!(*told.lock().unwrap(), ["first: the server stopped"]);

        // Once nobody holds the set, the next one is new.
        let weak = Arc::downgrade(&first);
        drop((first, second));
        assert_eq!(weak.strong_count(), 0, "the last holder let go: the set is gone");
        let again = servers(config(), &settings, roots, first_warn);
        assert!(!held_elsewhere(&again));
    }
}
