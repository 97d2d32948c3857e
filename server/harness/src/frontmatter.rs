//! YAML frontmatter, as pi reads it from skills and prompt templates: a file that starts with
//! `---`, a YAML mapping, a line `---`, then the body. A file without it is all body.

use yaml_rust2::{Yaml, YamlLoader};

/// Longer frontmatter is refused rather than parsed: it is a few fields, and a parser fed a
/// hostile megabyte of nesting should not get the chance to spend the startup on it.
const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// A file split into its frontmatter fields and its body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Document {
    /// The mapping; `Yaml::Null` when the file has none.
    pub fields: Yaml,
    /// What follows the frontmatter, trimmed (pi trims it too).
    pub body: String,
}

impl Document {
    /// A field's text, if it is a string (or a scalar YAML reads as another type: `name: 2024`).
    pub fn text(&self, key: &str) -> Option<String> {
        scalar_text(&self.fields[key])
    }

    /// Whether `key` is present at all.
    pub fn has(&self, key: &str) -> bool {
        !matches!(self.fields[key], Yaml::BadValue | Yaml::Null)
    }
}

/// Splits `content`; an error says why the frontmatter could not be read.
pub(crate) fn parse(content: &str) -> Result<Document, String> {
    let normalized = content.strip_prefix('\u{feff}').unwrap_or(content).replace("\r\n", "\n").replace('\r', "\n");
    let Some(rest) = normalized.strip_prefix("---") else {
        return Ok(Document { fields: Yaml::Null, body: normalized });
    };
    let Some(end) = rest.find("\n---") else {
        return Ok(Document { fields: Yaml::Null, body: normalized });
    };
    let yaml = &rest[..end];
    let body = rest[end + 4..].trim().to_string();
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!("the frontmatter is longer than {} KiB", MAX_FRONTMATTER_BYTES / 1024));
    }
    let documents = YamlLoader::load_from_str(yaml).map_err(|err| format!("invalid YAML frontmatter: {err}"))?;
    let fields = documents.into_iter().next().unwrap_or(Yaml::Null);
    match fields {
        Yaml::Hash(_) | Yaml::Null => Ok(Document { fields, body }),
        _ => Err("the frontmatter is not a mapping of fields".into()),
    }
}

/// The text of a scalar: strings as they are, numbers and booleans as YAML wrote them.
pub(crate) fn scalar_text(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(text) | Yaml::Real(text) => Some(text.clone()),
        Yaml::Integer(number) => Some(number.to_string()),
        Yaml::Boolean(value) => Some(value.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_fields_and_body() {
        let doc =
            parse("---\nname: pdf-tools\ndescription: >\n  Extract text.\n  From PDFs.\n---\n\n# Body\n").unwrap();
        assert_eq!(doc.text("name").as_deref(), Some("pdf-tools"));
        assert_eq!(doc.text("description").as_deref(), Some("Extract text. From PDFs.\n"));
        assert_eq!(doc.body, "# Body");
        assert!(!doc.has("license"));
    }

    #[test]
    fn without_frontmatter_all_is_body() {
        for text in ["# Title\nbody", "---no end\nbody", ""] {
            let doc = parse(text).unwrap();
            assert_eq!((doc.fields.clone(), doc.body.as_str()), (Yaml::Null, text));
        }
        assert_eq!(parse("\u{feff}---\r\na: 1\r\n---\r\nx").unwrap().text("a").as_deref(), Some("1"));
    }

    #[test]
    fn broken_frontmatter_is_an_error_not_a_panic() {
        assert!(parse("---\nname: [unclosed\n---\nbody").unwrap_err().starts_with("invalid YAML"));
        assert_eq!(parse("---\n- a\n- b\n---\n").unwrap_err(), "the frontmatter is not a mapping of fields");
        let nested = format!("---\nx: {}{}\n---\n", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(&nested).is_err());
        let deep = format!("---\nx: {}1{}\n---\n", "[".repeat(5_000), "]".repeat(5_000));
        let _ = parse(&deep);
    }
}
