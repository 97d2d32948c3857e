//! Which MCP tools the model gets declared. While they are few, all of them; past a threshold (a
//! share of the context window), only a server's `direct` ones and `tool_search`, which declares
//! the tools it finds from the next request on — as pi 1.6's deferred exposure and Claude Code's
//! tool search do. With 300 tools the first request then carries names, not 180 KB of schemas.
//!
//! A tool once declared stays declared for the session, after those declared before it: the
//! request's tool list only grows at its end, so the provider's cached prefix holds. The tools
//! the model found are told to the session (which records them), so that a reload declares them
//! again.

use std::sync::{Arc, Mutex};

use reins_agent::lock;

/// How a server's tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Declared in every request.
    Direct,
    /// Found through `tool_search`, declared from the request after.
    Deferred,
}

/// Told the names `tool_search` found first, for the session to record.
type OnFound = Box<dyn Fn(&[String]) + Send + Sync>;

/// One session's declared MCP tools, kept across the turns and the server sets it joins.
pub struct Declared {
    state: Mutex<DeclaredState>,
    on_found: OnFound,
}

#[derive(Default)]
struct DeclaredState {
    /// The public names declared so far (`tool_search` among them), in the order declared.
    order: Vec<String>,
    /// The deferred tools the model found, in the order found.
    found: Vec<String>,
}

/// How one tool stands for the next request.
pub(crate) struct Candidate<'a> {
    pub(crate) name: &'a str,
    pub(crate) deferred: bool,
}

impl Declared {
    /// A session's state: `found` as its file recorded them; `on_found` records new ones.
    pub fn new(found: Vec<String>, on_found: impl Fn(&[String]) + Send + Sync + 'static) -> Arc<Self> {
        let state = Mutex::new(DeclaredState { order: Vec::new(), found });
        Arc::new(Self { state, on_found: Box::new(on_found) })
    }

    /// A state that records nothing (listings, sessions without a file).
    pub fn unrecorded() -> Arc<Self> {
        Self::new(Vec::new(), |_| {})
    }

    /// The deferred tools found so far, in order.
    pub fn found(&self) -> Vec<String> {
        lock(&self.state).found.clone()
    }

    /// Notes tools `tool_search` found; answers those not found before (and records them).
    pub(crate) fn add_found(&self, names: &[String]) -> Vec<String> {
        let new: Vec<String> = {
            let mut state = lock(&self.state);
            let new: Vec<String> = names.iter().filter(|name| !state.found.contains(name)).cloned().collect();
            state.found.extend(new.iter().cloned());
            new
        };
        if !new.is_empty() {
            (self.on_found)(&new);
        }
        new
    }

    /// The names to declare in the next request, in order, of `candidates` (in the servers'
    /// order): what was declared before and is still there keeps its place; then come the
    /// direct tools not declared yet, `search` (when some tool is deferred), and the deferred
    /// tools found, in the order found.
    pub(crate) fn declare(&self, candidates: &[Candidate<'_>], search: &str) -> Vec<String> {
        let mut state = lock(&self.state);
        let any_deferred = candidates.iter().any(|candidate| candidate.deferred);
        let present = |name: &str| (name == search && any_deferred) || candidates.iter().any(|c| c.name == name);
        let mut order: Vec<String> = state.order.iter().filter(|name| present(name)).cloned().collect();
        let mut add = |name: &str| {
            if !order.iter().any(|known| known == name) {
                order.push(name.to_string());
            }
        };
        for candidate in candidates.iter().filter(|candidate| !candidate.deferred) {
            add(candidate.name);
        }
        if any_deferred {
            add(search);
        }
        for name in &state.found {
            if candidates.iter().any(|candidate| candidate.deferred && candidate.name == name) {
                add(name);
            }
        }
        state.order = order.clone();
        order
    }
}

/// How many tokens of MCP tool declarations a context window of `window` tokens takes before
/// they are deferred, for a share `share` (of 1) of it: 0 defers any tool, 1 or more none.
pub fn defer_above(window: u64, share: f64) -> Option<u64> {
    (share < 1.0).then(|| (window as f64 * share.max(0.0)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declare(declared: &Declared, candidates: &[(&str, bool)]) -> String {
        let candidates: Vec<Candidate> =
            candidates.iter().map(|(name, deferred)| Candidate { name, deferred: *deferred }).collect();
        declared.declare(&candidates, "tool_search").join(" ")
    }

    #[test]
    fn found_tools_join_at_the_end_and_nothing_moves() {
        let declared = Declared::unrecorded();
        let tools = [("a", false), ("b", true), ("c", true), ("d", true)];
        assert_eq!(declare(&declared, &tools), "a tool_search");
        declared.add_found(&["d".into()]);
        assert_eq!(declare(&declared, &tools), "a tool_search d");
        declared.add_found(&["b".into(), "d".into()]);
        assert_eq!(declare(&declared, &tools), "a tool_search d b");
        // A server that joins later adds its direct tools at the end too.
        let later = [("a", false), ("b", true), ("c", true), ("d", true), ("e", false)];
        assert_eq!(declare(&declared, &later), "a tool_search d b e");
    }

    #[test]
    fn a_tool_declared_once_stays_when_the_threshold_is_passed_later() {
        let declared = Declared::unrecorded();
        assert_eq!(declare(&declared, &[("a", false), ("b", false)]), "a b");
        // A big server joined: everything is deferred now, but what the model had stays.
        assert_eq!(declare(&declared, &[("a", true), ("b", true), ("big", true)]), "a b tool_search");
        // A server that went away takes its tools along.
        assert_eq!(declare(&declared, &[("a", true), ("big", true)]), "a tool_search");
    }

    #[test]
    fn a_reload_declares_what_the_session_found_and_records_only_new_finds() {
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let sink = recorded.clone();
        let declared = Declared::new(vec!["c".into()], move |names| lock(&sink).push(names.join(",")));
        assert_eq!(declare(&declared, &[("a", false), ("b", true), ("c", true)]), "a tool_search c");
        assert_eq!(declared.add_found(&["c".into(), "b".into()]), vec!["b".to_string()]);
        assert_eq!(declared.add_found(&["b".into()]), Vec::<String>::new());
        assert_eq!(*lock(&recorded), vec!["b".to_string()]);
    }

    #[test]
    fn the_threshold_is_a_share_of_the_window() {
        assert_eq!(defer_above(128_000, 0.1), Some(12_800));
        assert_eq!(defer_above(128_000, 0.0), Some(0));
        assert_eq!(defer_above(128_000, -3.0), Some(0));
        assert_eq!(defer_above(128_000, 1.0), None);
    }
}
