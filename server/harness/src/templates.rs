//! Prompt templates, as pi 1.6 writes them: `prompts/NAME.md`, invoked as `/NAME args`, whose
//! body becomes the user's message with the arguments put in (`$1`, `$@`, `${1:-default}`,
//! `${@:N}`, `${@:N:L}`). Arguments are split like a shell's words, as pi splits them.

use std::path::{Path, PathBuf};

use crate::frontmatter;
use crate::skills::{Scope, Warning};

/// pi's length for a description taken from the body's first line.
const DESCRIPTION_FROM_BODY_CHARS: usize = 60;
const MAX_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The file's name without `.md`.
    pub name: String,
    pub description: String,
    /// What the arguments are (`"[focus]"`), for completion.
    pub argument_hint: Option<String>,
    pub body: String,
    pub path: PathBuf,
    pub scope: Scope,
}

/// The templates of some folders (a name taken earlier wins) and what was wrong on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Templates {
    pub templates: Vec<Template>,
    pub warnings: Vec<Warning>,
}

impl Templates {
    /// The `.md` files directly in each of `folders`, in order.
    pub fn discover(folders: &[(PathBuf, Scope)]) -> Self {
        let mut found = Self::default();
        for (folder, scope) in folders {
            let Ok(entries) = std::fs::read_dir(folder) else { continue };
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
                .collect();
            paths.sort();
            for path in paths {
                match load(&path, *scope) {
                    Ok(template) => match found.find(&template.name) {
                        Some(first) => {
                            let message = format!(
                                "template name {:?} is taken by {}; this one is ignored",
                                template.name,
                                first.path.display()
                            );
                            found.warnings.push(Warning { path, message });
                        }
                        None => found.templates.push(template),
                    },
                    Err(message) => found.warnings.push(Warning { path, message }),
                }
            }
        }
        found
    }

    pub fn find(&self, name: &str) -> Option<&Template> {
        self.templates.iter().find(|template| template.name == name)
    }
}

fn load(path: &Path, scope: Scope) -> Result<Template, String> {
    let size = std::fs::metadata(path).map_err(|err| format!("cannot read it: {err}"))?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB; not loaded", MAX_FILE_BYTES / 1024 / 1024));
    }
    let content = std::fs::read_to_string(path).map_err(|err| format!("cannot read it: {err}"))?;
    let doc = frontmatter::parse(&content)?;
    let description = doc.text("description").filter(|text| !text.is_empty()).unwrap_or_else(|| {
        let first = doc.body.lines().find(|line| !line.trim().is_empty()).unwrap_or_default();
        let mut short: String = first.chars().take(DESCRIPTION_FROM_BODY_CHARS).collect();
        if first.chars().count() > DESCRIPTION_FROM_BODY_CHARS {
            short.push_str("...");
        }
        short
    });
    Ok(Template {
        name: path.file_stem().unwrap_or_default().to_string_lossy().into_owned(),
        description,
        argument_hint: doc.text("argument-hint"),
        body: doc.body,
        path: path.to_path_buf(),
        scope,
    })
}

/// The template's body with `args` (as typed after `/name`) put in.
pub fn expand(template: &Template, args: &str) -> String {
    substitute(&template.body, &split_args(args))
}

/// Splits arguments like a shell's words: `"API compatibility"` is one; a quote opens only at
/// the start of a word (`doesn't` stays as it is) and one left open is kept as text; inside
/// quotes, a backslash before the same quote keeps it, other backslashes stay as typed.
pub fn split_args(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut started = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if (c == '"' || c == '\'') && !started {
            // A quoted word, if its quote closes; else the quote is plain text.
            let mut word = String::new();
            let mut j = i + 1;
            let mut closed = false;
            while j < chars.len() {
                if chars[j] == '\\' && chars.get(j + 1) == Some(&c) {
                    word.push(c);
                    j += 2;
                } else if chars[j] == c {
                    closed = true;
                    break;
                } else {
                    word.push(chars[j]);
                    j += 1;
                }
            }
            started = true;
            if closed {
                current.push_str(&word);
                i = j + 1;
            } else {
                current.push(c);
                i += 1;
            }
            continue;
        }
        if c.is_whitespace() {
            if started {
                args.push(std::mem::take(&mut current));
                started = false;
            }
        } else {
            current.push(c);
            started = true;
        }
        i += 1;
    }
    if started {
        args.push(current);
    }
    args
}

/// Puts `args` into `body`. What the arguments contain is not substituted again.
pub fn substitute(body: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let nth = |n: usize| n.checked_sub(1).and_then(|index| args.get(index)).cloned();
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        match placeholder(tail) {
            Some((Placeholder::Default(target, default), len)) => {
                let value = match target {
                    Target::All => Some(all.clone()),
                    Target::Nth(n) => nth(n),
                };
                out.push_str(value.as_deref().filter(|value| !value.is_empty()).unwrap_or(default));
                rest = &tail[len..];
            }
            Some((Placeholder::Slice(start, count), len)) => {
                let from = start.saturating_sub(1).min(args.len());
                let to = count.map_or(args.len(), |count| from.saturating_add(count).min(args.len()));
                out.push_str(&args[from..to].join(" "));
                rest = &tail[len..];
            }
            Some((Placeholder::Simple(Target::All), len)) => {
                out.push_str(&all);
                rest = &tail[len..];
            }
            Some((Placeholder::Simple(Target::Nth(n)), len)) => {
                out.push_str(&nth(n).unwrap_or_default());
                rest = &tail[len..];
            }
            None => {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

enum Target {
    All,
    Nth(usize),
}

enum Placeholder<'a> {
    /// `${1:-text}`, `${@:-text}`, `${ARGUMENTS:-text}`.
    Default(Target, &'a str),
    /// `${@:N}`, `${@:N:L}`.
    Slice(usize, Option<usize>),
    /// `$1`, `$@`, `$ARGUMENTS`.
    Simple(Target),
}

/// The placeholder at the start of `text` (which starts with `$`), and its length in bytes.
fn placeholder(text: &str) -> Option<(Placeholder<'_>, usize)> {
    let after = &text[1..];
    if let Some(inner) = after.strip_prefix('{') {
        let close = inner.find('}')?;
        let inside = &inner[..close];
        let len = 2 + close + 1;
        if let Some((target, default)) = inside.split_once(":-") {
            let target = match target {
                "@" | "ARGUMENTS" => Target::All,
                digits => Target::Nth(number(digits)?),
            };
            return Some((Placeholder::Default(target, default), len));
        }
        let slice = inside.strip_prefix("@:")?;
        let (start, count) = match slice.split_once(':') {
            Some((start, count)) => (number(start)?, Some(number(count)?)),
            None => (number(slice)?, None),
        };
        return Some((Placeholder::Slice(start, count), len));
    }
    if after.starts_with("ARGUMENTS") {
        return Some((Placeholder::Simple(Target::All), 1 + "ARGUMENTS".len()));
    }
    if after.starts_with('@') {
        return Some((Placeholder::Simple(Target::All), 2));
    }
    let digits = after.chars().take_while(char::is_ascii_digit).count();
    (digits > 0).then(|| (Placeholder::Simple(Target::Nth(after[..digits].parse().unwrap_or(usize::MAX))), 1 + digits))
}

fn number(text: &str) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse().unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_args(input: &str, expected: &[&str]) {
        assert_eq!(split_args(input), expected, "{input}");
    }

    fn check_substitute(body: &str, args: &str, expected: &str) {
        assert_eq!(substitute(body, &split_args(args)), expected, "{body} with {args}");
    }

    #[test]
    fn arguments_split_like_pis() {
        check_args("", &[]);
        check_args("  a  b ", &["a", "b"]);
        check_args(r#""API compatibility" x"#, &["API compatibility", "x"]);
        check_args("doesn't matter", &["doesn't", "matter"]);
        check_args(r#""the \"fast\" path""#, &[r#"the "fast" path"#]);
        check_args(r#"'it''s'"#, &["it's'"]);
        check_args(r#""unclosed quote"#, &["\"unclosed", "quote"]);
        check_args(r#"a\b "c\d""#, &[r"a\b", r"c\d"]);
        check_args(r#""" x"#, &["", "x"]);
    }

    #[test]
    fn placeholders_as_pis_docs_list_them() {
        let body = "Review the staged changes. Focus on ${1:-correctness, security, and error handling}.";
        check_substitute(body, "", "Review the staged changes. Focus on correctness, security, and error handling.");
        check_substitute(body, "concurrency", "Review the staged changes. Focus on concurrency.");
        check_substitute("$1 and $2 then $3.", "a b", "a and b then .");
        check_substitute("all: $@ / $ARGUMENTS", "a \"b c\"", "all: a b c / a b c");
        check_substitute("${@:-none}", "", "none");
        check_substitute("${ARGUMENTS:-none}", "x", "x");
        check_substitute("${@:2}", "a b c d", "b c d");
        check_substitute("${@:2:2}", "a b c d", "b c");
        check_substitute("${@:0}", "a b", "a b");
        check_substitute("${@:9}|${@:3:99}", "a b c", "|c");
        check_substitute("cost $5, $ alone, ${x}, ${1:-$2}", "", "cost , $ alone, ${x}, $2");
        check_substitute("$1", "'$2' x", "$2");
        check_substitute("$99999999999999999999999 ${@:99999999999999999999:9}", "a", " ");
        check_substitute("é$1ü", "ß", "éßü");
    }

    #[test]
    fn templates_load_with_pis_frontmatter() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("prompts");
        std::fs::create_dir_all(dir.join("nested")).unwrap();
        std::fs::write(
            dir.join("review.md"),
            "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\nReview the staged changes. Focus on ${1:-correctness}.\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("plain.md"),
            "\n\nExplain this code in detail, line by line, for a newcomer to the project today\n",
        )
        .unwrap();
        std::fs::write(dir.join("nested/skipped.md"), "x").unwrap();
        std::fs::write(dir.join("broken.md"), "---\na: [\n---\nx").unwrap();
        let found = Templates::discover(&[(dir.clone(), Scope::User)]);
        let names: Vec<_> = found
            .templates
            .iter()
            .map(|t| (t.name.as_str(), t.description.as_str(), t.argument_hint.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("plain", "Explain this code in detail, line by line, for a newcomer to...", None),
                ("review", "Review staged git changes", Some("[focus]")),
            ]
        );
        assert_eq!(found.warnings.len(), 1);
        assert_eq!(
            expand(found.find("review").unwrap(), "concurrency"),
            "Review the staged changes. Focus on concurrency."
        );
    }
}
