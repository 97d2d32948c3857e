//! Claude Code's scoped bash rules, as a skill's `allowed-tools` carries them (`Bash(git:*)`,
//! `Bash(npm run test *)`): which commands a rule approves without asking.
//!
//! Only a plain command can match: one command and its words. A second command (after `;`, `&`,
//! `&&`, `|`, `||` or a new line), a command substitution (`$(…)`, backticks), a `${…}`
//! expansion, a redirection, a subshell, an unclosed quote or a control character make the
//! command one the rule's author never saw, and it is asked about as before. Quoted text is
//! text: `git commit -m "a; b"` is plain.

/// The text inside one `Bash(…)`: words with `*` standing for any run of characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRule {
    /// With Claude Code's older `:*` ending written as ` *`.
    pattern: String,
}

impl CommandRule {
    /// A rule from the text inside `Bash(…)`: an exact command (`npm test`), a prefix (`git:*`,
    /// `git *`: git with any arguments, or none) or a pattern (`git * main`). A rule that is not
    /// itself a plain command is refused: what it would mean is not clear.
    pub fn parse(specifier: &str) -> Result<Self, String> {
        let specifier = specifier.trim();
        let pattern = match specifier.strip_suffix(":*") {
            Some(prefix) => format!("{} *", prefix.trim_end()),
            None => specifier.to_string(),
        };
        if pattern.trim_start_matches([' ', '*']).is_empty() {
            return Err(format!("Bash({specifier}) names no command; write Bash to approve every command"));
        }
        if !is_plain(&pattern) {
            return Err(format!("Bash({specifier}) is not one plain command"));
        }
        Ok(Self { pattern })
    }

    /// Whether `command` is a plain command that the rule covers.
    pub fn matches(&self, command: &str) -> bool {
        let command = command.trim_matches([' ', '\t']);
        if !is_plain(command) {
            return false;
        }
        // `git *` covers `git` alone too, as in Claude Code.
        let bare = self.pattern.strip_suffix(" *").is_some_and(|prefix| prefix == command);
        bare || wildcard(self.pattern.as_bytes(), command.as_bytes())
    }
}

/// Whether `command` is one simple command: its words, quoted or not, and nothing that runs or
/// reads anything else.
fn is_plain(command: &str) -> bool {
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                // An escaped character is text; an escaped new line joins lines.
                let escaped = chars.next();
                if escaped.is_none_or(|next| next == '\n' || next == '\r') {
                    return false;
                }
            }
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(c) if c != '\t' && c.is_control() => return false,
                    Some(_) => {}
                    None => return false,
                }
            },
            '"' => loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => {
                        let escaped = chars.next();
                        if escaped.is_none_or(|next| next.is_control()) {
                            return false;
                        }
                    }
                    Some('`') => return false,
                    Some('$') if matches!(chars.peek(), Some('(' | '{')) => return false,
                    Some(c) if c != '\t' && c.is_control() => return false,
                    Some(_) => {}
                    None => return false,
                }
            },
            ';' | '&' | '|' | '<' | '>' | '(' | ')' | '`' => return false,
            '$' if matches!(chars.peek(), Some('(' | '{')) => return false,
            c if c != '\t' && c.is_control() => return false,
            _ => {}
        }
    }
    true
}

/// `*` in `pattern` matches any run of bytes of `text`; everything else matches itself.
fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and where in the text it started matching.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            // Let the `*` take one more byte and try again.
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each command with `y` when `rule` approves it, `n` when it is asked about.
    fn check(rule: &str, commands: &[(&str, char)]) {
        let rule = CommandRule::parse(rule).unwrap();
        for (command, expected) in commands {
            let got = if rule.matches(command) { 'y' } else { 'n' };
            assert_eq!(got, *expected, "{rule:?} on {command:?}");
        }
    }

    #[test]
    fn a_prefix_approves_the_command_with_any_arguments_and_nothing_more() {
        check(
            "git:*",
            &[
                ("git status", 'y'),
                ("git", 'y'),
                ("  git log --oneline -5  ", 'y'),
                ("git commit -m \"fix: a; b && c | d > e $(f) `g`\"", 'n'),
                ("git commit -m 'fix: a; b && c | d > e $(f) `g`'", 'y'),
                ("git commit -m \"fix: a; b && c | d > e\"", 'y'),
                ("gitk", 'n'),
                ("git-lfs pull", 'n'),
                ("sudo git status", 'n'),
                ("git status; rm -rf x", 'n'),
                ("git status;rm -rf x", 'n'),
                ("git status && rm -rf x", 'n'),
                ("git status || rm -rf x", 'n'),
                ("git status & rm -rf x", 'n'),
                ("git status | sh", 'n'),
                ("git status\nrm -rf x", 'n'),
                ("git status\r\nrm -rf x", 'n'),
                ("git status \\\nrm", 'n'),
                ("git log $(rm -rf x)", 'n'),
                ("git log \"$(rm -rf x)\"", 'n'),
                ("git log `rm -rf x`", 'n'),
                ("git log \"`rm -rf x`\"", 'n'),
                ("git log ${IFS}x", 'n'),
                ("git log > .git/hooks/pre-commit", 'n'),
                ("git log 2>&1", 'n'),
                ("git apply < patch", 'n'),
                ("git log <(rm -rf x)", 'n'),
                ("git log (x)", 'n'),
                ("git log 'unclosed", 'n'),
                ("git log \"unclosed", 'n'),
                ("git log \\", 'n'),
                ("git log \u{1b}[2J", 'n'),
                ("git log \\;", 'y'),
                ("git log $HOME", 'y'),
            ],
        );
    }

    #[test]
    fn claude_codes_forms_mean_what_they_mean_there() {
        check(
            "npm run test:*",
            &[("npm run test", 'y'), ("npm run test -- --watch", 'y'), ("npm run testx", 'n'), ("npm run build", 'n')],
        );
        check("npm run test *", &[("npm run test", 'y'), ("npm run test unit", 'y'), ("npm run testx", 'n')]);
        check("npm test", &[("npm test", 'y'), ("npm test x", 'n'), ("npm testx", 'n')]);
        check("ls*", &[("ls", 'y'), ("lsof", 'y'), ("ls -la", 'y'), ("ls; rm", 'n')]);
        check("git * main", &[("git checkout main", 'y'), ("git merge main", 'y'), ("git push origin dev", 'n')]);
    }

    #[test]
    fn a_rule_that_is_not_one_plain_command_is_refused() {
        for bad in ["", "*", " :*", "git status; rm:*", "a && b", "x $(y)"] {
            assert!(CommandRule::parse(bad).is_err(), "{bad:?}");
        }
    }
}
