//! Public tool names: tool `t` of server `s` is offered to the model as `mcp__s__t` (the
//! convention of pi and Claude Code), within what providers accept: `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! A name that is already valid is kept as it is. Otherwise every other character becomes `_`,
//! the name is cut to fit, and `_` plus eight hex digits of a hash of the original pair end it:
//! the same pair always gets the same name (sessions record it), and two pairs that sanitise
//! alike still differ. [`assign_names`] makes the names of one set unique even against names
//! crafted to look like another's hashed form.

use std::hash::Hasher;

/// The longest name providers accept.
pub const MAX_NAME_LEN: usize = 64;

const PREFIX: &str = "mcp__";
const SEPARATOR: &str = "__";
/// `_` and eight hex digits.
const HASH_SUFFIX_LEN: usize = 9;

/// The public name of tool `tool` of server `server`, on its own.
pub fn public_name(server: &str, tool: &str) -> String {
    name_with_salt(server, tool, 0)
}

/// The public names of a set of (server, tool) pairs, in their order; all different.
pub fn assign_names(pairs: &[(&str, &str)]) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    pairs
        .iter()
        .map(|&(server, tool)| {
            let mut salt = 0;
            let mut name = name_with_salt(server, tool, salt);
            while taken.contains(&name) {
                salt += 1;
                name = name_with_salt(server, tool, salt);
            }
            taken.insert(name.clone());
            name
        })
        .collect()
}

fn name_with_salt(server: &str, tool: &str, salt: u32) -> String {
    let raw = format!("{PREFIX}{server}{SEPARATOR}{tool}");
    let clean: String = raw.chars().map(|c| if is_allowed(c) { c } else { '_' }).collect();
    if salt == 0 && clean == raw && raw.len() <= MAX_NAME_LEN {
        return raw;
    }
    // `clean` is ASCII, so any byte index is a character boundary.
    let keep = clean.len().min(MAX_NAME_LEN - HASH_SUFFIX_LEN);
    format!("{}_{:08x}", &clean[..keep], hash(server, tool, salt))
}

fn is_allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// 32 bits of FNV-1a over the pair: stable across builds and platforms, unlike std's hasher.
fn hash(server: &str, tool: &str, salt: u32) -> u32 {
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(server.as_bytes());
    hasher.write(&[0]);
    hasher.write(tool.as_bytes());
    if salt > 0 {
        hasher.write(&salt.to_le_bytes());
    }
    let full = hasher.finish();
    (full ^ (full >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    fn check(pairs: &[(&str, &str)], expected: expect_test::Expect) {
        let names = assign_names(pairs);
        for name in &names {
            assert!(!name.is_empty() && name.len() <= MAX_NAME_LEN, "{name}");
            assert!(name.chars().all(is_allowed), "{name}");
            assert!(name.starts_with(PREFIX), "{name}");
        }
        let table: Vec<String> =
            pairs.iter().zip(&names).map(|((server, tool), name)| format!("{server} / {tool} -> {name}")).collect();
        expected.assert_eq(&table.join("\n"));
    }

    #[test]
    fn valid_names_are_kept_and_others_sanitised_with_a_hash() {
        check(
            &[
                ("everything", "echo"),
                ("docs", "get-page"),
                ("my.server", "read file"),
                ("my_server", "read_file"),
                ("données", "résumé"),
                ("s", "t/ü/ß"),
            ],
            expect![[r#"
                everything / echo -> mcp__everything__echo
                docs / get-page -> mcp__docs__get-page
                my.server / read file -> mcp__my_server__read_file_56801dca
                my_server / read_file -> mcp__my_server__read_file
                données / résumé -> mcp__donn_es__r_sum__67d1526e
                s / t/ü/ß -> mcp__s__t_____79504221"#]],
        );
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_hash() {
        let long_tool = "a_tool_with_a_very_long_name_that_goes_on_and_on_and_on";
        check(
            &[("github", long_tool), ("github", &format!("{long_tool}_too")), ("x".repeat(80).as_str(), "t")],
            expect![[r#"
                github / a_tool_with_a_very_long_name_that_goes_on_and_on_and_on -> mcp__github__a_tool_with_a_very_long_name_that_goes_on__5367856d
                github / a_tool_with_a_very_long_name_that_goes_on_and_on_and_on_too -> mcp__github__a_tool_with_a_very_long_name_that_goes_on__42d922d8
                xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx / t -> mcp__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_7bcfca49"#]],
        );
    }

    #[test]
    fn a_name_crafted_to_collide_gets_another_hash() {
        let hashed = public_name("a.b", "t");
        let crafted_tool = hashed.strip_prefix("mcp__a_b__").unwrap();
        let names = assign_names(&[("a.b", "t"), ("a_b", crafted_tool)]);
        assert_eq!(names[0], hashed);
        assert_ne!(names[0], names[1]);
        assert!(names[1].len() <= MAX_NAME_LEN && names[1].chars().all(is_allowed));
        // The same set in the same order names the same way every time.
        assert_eq!(names, assign_names(&[("a.b", "t"), ("a_b", crafted_tool)]));
    }
}
