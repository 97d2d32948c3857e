//! A prefix cache as Anthropic's works, for benchmarks and cache tests: what a request would read
//! from the cache and write to it, given every request before it.
//!
//! The prompt is the sequence of blocks in the API's cache order — each tool, then each system
//! block, then each block of each message (with its role). A block carrying `cache_control` is a
//! breakpoint: the prefix ending there is written to the cache. A later request reads the longest
//! cached prefix that ends at one of its block boundaries within 20 blocks before one of its
//! breakpoints (the API's look-back), so a conversation that grows by a few blocks per turn keeps
//! reading what the previous turn wrote. Tokens are estimated at 4 characters of a block's JSON
//! each; `cache_control` itself does not count and does not change a prefix.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// How far before a breakpoint the API looks for an earlier cached prefix.
const LOOK_BACK_BLOCKS: usize = 20;

/// The prefixes written so far, by hash of the model and the prefix's blocks.
#[derive(Debug, Default)]
pub struct PrefixCache {
    written: HashSet<u64>,
}

/// The prompt tokens of one request, split as the API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Not cached, not written: after the last breakpoint.
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl CacheUsage {
    pub fn prompt_tokens(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

/// One block of the prompt: its tokens, the hash of the prefix ending with it, whether it is a
/// breakpoint.
struct Block {
    tokens: u64,
    prefix_hash: u64,
    breakpoint: bool,
}

impl PrefixCache {
    /// What the Messages API request `body` reads and writes; records what it writes.
    pub fn request(&mut self, body: &Value) -> CacheUsage {
        let blocks = blocks(body);
        let total: u64 = blocks.iter().map(|block| block.tokens).sum();
        let breakpoints: Vec<usize> =
            blocks.iter().enumerate().filter(|(_, block)| block.breakpoint).map(|(at, _)| at).collect();
        let Some(&last) = breakpoints.last() else {
            return CacheUsage { input: total, ..CacheUsage::default() };
        };
        // The longest cached prefix the API would find from any breakpoint.
        let read_end = breakpoints
            .iter()
            .filter_map(|&at| {
                (at.saturating_sub(LOOK_BACK_BLOCKS)..=at)
                    .rev()
                    .find(|&end| self.written.contains(&blocks[end].prefix_hash))
            })
            .max();
        let tokens_to = |end: usize| blocks[..=end].iter().map(|block| block.tokens).sum::<u64>();
        let cache_read = read_end.map_or(0, tokens_to);
        let cache_write = tokens_to(last) - cache_read;
        for &at in &breakpoints {
            self.written.insert(blocks[at].prefix_hash);
        }
        CacheUsage { input: total - cache_read - cache_write, cache_read, cache_write }
    }
}

/// The blocks of a request in cache order, each with the hash of the prefix it ends.
fn blocks(body: &Value) -> Vec<Block> {
    let mut hasher = DefaultHasher::new();
    body.get("model").and_then(Value::as_str).unwrap_or_default().hash(&mut hasher);
    let mut out = Vec::new();
    let mut push = |kind: &str, block: &Value| {
        let mut block = block.clone();
        let breakpoint = match &mut block {
            Value::Object(map) => map.remove("cache_control").is_some(),
            _ => false,
        };
        let text = block.to_string();
        kind.hash(&mut hasher);
        text.hash(&mut hasher);
        out.push(Block { tokens: text.len().div_ceil(4) as u64, prefix_hash: hasher.finish(), breakpoint });
    };
    for tool in body.get("tools").and_then(Value::as_array).into_iter().flatten() {
        push("tool", tool);
    }
    match body.get("system") {
        Some(Value::String(text)) => push("system", &Value::String(text.clone())),
        Some(Value::Array(blocks)) => blocks.iter().for_each(|block| push("system", block)),
        _ => {}
    }
    for message in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        match message.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().for_each(|block| push(role, block)),
            Some(content) => push(role, content),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(messages: &[(&str, &str)], last_breakpoint: bool) -> Value {
        let count = messages.len();
        let messages: Vec<Value> = messages
            .iter()
            .enumerate()
            .map(|(at, (role, text))| {
                let mut block = json!({"type": "text", "text": text});
                if last_breakpoint && at + 1 == count {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
                json!({"role": role, "content": [block]})
            })
            .collect();
        json!({
            "model": "m",
            "tools": [{"name": "read", "description": "Read a file.", "input_schema": {}}],
            "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        })
    }

    #[test]
    fn a_growing_conversation_reads_what_the_turn_before_wrote() {
        let mut cache = PrefixCache::default();
        let first = cache.request(&body(&[("user", "hello there")], true));
        assert_eq!((first.cache_read, first.input), (0, 0));
        assert!(first.cache_write > 0);
        let second = cache.request(&body(&[("user", "hello there"), ("assistant", "hi"), ("user", "more")], true));
        assert_eq!(second.cache_read, first.cache_write, "{second:?}");
        assert!(second.cache_write > 0 && second.input == 0);
        // Without a breakpoint on the conversation, only tools and system are read.
        let third = cache.request(&body(&[("user", "something else")], false));
        let prefix = cache.request(&body(&[], false)).cache_read;
        assert_eq!((third.cache_read, third.cache_write), (prefix, 0));
        assert!(third.input > 0);
    }

    #[test]
    fn another_model_or_changed_tools_read_nothing() {
        let mut cache = PrefixCache::default();
        cache.request(&body(&[("user", "hello")], true));
        let mut other = body(&[("user", "hello")], true);
        other["model"] = json!("n");
        assert_eq!(cache.request(&other).cache_read, 0);
        let mut tools = body(&[("user", "hello")], true);
        tools["tools"][0]["description"] = json!("Read one file.");
        assert_eq!(cache.request(&tools).cache_read, 0);
    }
}
