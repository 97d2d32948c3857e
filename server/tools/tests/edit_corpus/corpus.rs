//! The edit corpus as data: near-miss `edit` calls a model makes, each a JSON file in this
//! directory with the file before, the call's arguments, and the file expected after (or
//! `{"refuse": "words the refusal must contain"}`), grouped by category.
//!
//! Shared, through `#[path]`, by the corpus test (server/tools/tests/edit_corpus.rs), the
//! end-to-end test through `reins run` (tests/e2e/edit_corpus.rs) and the bench command, so all
//! three judge a case the same way.

#![allow(dead_code)]

use std::fmt;
use std::path::Path;

use serde_json::Value;

/// One case of the corpus.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file name without `.json`.
    pub name: String,
    pub category: String,
    pub description: String,
    /// Where the file lives in the workspace, as the model names it.
    pub path: String,
    pub file: String,
    /// The `edit` call's arguments, `path` included.
    pub args: Value,
    pub expected: Expected,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// The whole file after the edit, byte for byte.
    File(String),
    /// The edit must be refused with a message containing this.
    Refuse(String),
}

/// What the edit did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Landed(String),
    Refused(String),
}

/// A case's outcome against its expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Landed, byte for byte as expected.
    Landed,
    /// Refused as expected, with the expected words.
    RefusedAsExpected,
    /// Refused although it could land: safe, but a miss.
    Refused,
    /// Landed with a different file, or landed when it should have been refused, or refused
    /// without the expected words.
    Wrong,
}

/// The corpus's figures: landed and refused are shares of the cases that can land; wrong is a
/// share of all cases.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    pub cases: usize,
    pub landable: usize,
    pub landed: usize,
    pub refused: usize,
    pub wrong: usize,
    pub refusals_expected: usize,
    pub refused_as_expected: usize,
}

/// Every case in `dir`, sorted by name.
pub fn load(dir: &Path) -> Result<Vec<Case>, String> {
    let entries = std::fs::read_dir(dir).map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
    let mut paths: Vec<_> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|path| parse(path)).collect()
}

fn parse(path: &Path) -> Result<Case, String> {
    let fail = |what: &str| format!("{}: {what}", path.display());
    let text = std::fs::read_to_string(path).map_err(|err| fail(&err.to_string()))?;
    let json: Value = serde_json::from_str(&text).map_err(|err| fail(&err.to_string()))?;
    let string = |key: &str| json[key].as_str().map(str::to_string).ok_or_else(|| fail(&format!("no string {key:?}")));
    let expected = match &json["expected"] {
        Value::String(file) => Expected::File(file.clone()),
        other => match other["refuse"].as_str() {
            Some(words) => Expected::Refuse(words.to_string()),
            None => return Err(fail("expected is neither a file nor {\"refuse\": …}")),
        },
    };
    Ok(Case {
        name: path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default(),
        category: string("category")?,
        description: string("description")?,
        path: string("path")?,
        file: string("file")?,
        args: json["args"].clone(),
        expected,
    })
}

/// Runs `case` through the pure function behind the `edit` tool.
pub fn run_pure(case: &Case) -> Outcome {
    let edits: Vec<reins_tools::Edit> = match serde_json::from_value(case.args["edits"].clone()) {
        Ok(edits) => edits,
        Err(err) => return Outcome::Refused(format!("bad corpus args: {err}")),
    };
    let replace_all = case.args["replaceAll"].as_bool().unwrap_or(false);
    match reins_tools::apply_edits(&case.file, &edits, replace_all, &case.path) {
        Ok(applied) => Outcome::Landed(applied.text),
        Err(message) => Outcome::Refused(message),
    }
}

pub fn judge(case: &Case, outcome: &Outcome) -> Verdict {
    match (&case.expected, outcome) {
        (Expected::File(expected), Outcome::Landed(actual)) if expected == actual => Verdict::Landed,
        (Expected::File(_), Outcome::Refused(_)) => Verdict::Refused,
        (Expected::Refuse(words), Outcome::Refused(message)) if message.contains(words.as_str()) => {
            Verdict::RefusedAsExpected
        }
        _ => Verdict::Wrong,
    }
}

impl Figures {
    pub fn of<'c>(judged: impl IntoIterator<Item = (&'c Case, Verdict)>) -> Figures {
        let mut figures = Figures::default();
        for (case, verdict) in judged {
            figures.cases += 1;
            match case.expected {
                Expected::File(_) => figures.landable += 1,
                Expected::Refuse(_) => figures.refusals_expected += 1,
            }
            match verdict {
                Verdict::Landed => figures.landed += 1,
                Verdict::Refused => figures.refused += 1,
                Verdict::RefusedAsExpected => figures.refused_as_expected += 1,
                Verdict::Wrong => figures.wrong += 1,
            }
        }
        figures
    }

    pub fn landed_percent(&self) -> f64 {
        percent(self.landed, self.landable)
    }

    pub fn refused_percent(&self) -> f64 {
        percent(self.refused, self.landable)
    }

    pub fn wrong_percent(&self) -> f64 {
        percent(self.wrong, self.cases)
    }
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cases: landed {:.1}% ({}/{} that can land), refused {:.1}% ({}), wrong {:.1}% ({}); {}/{} refusals as expected",
            self.cases,
            self.landed_percent(),
            self.landed,
            self.landable,
            self.refused_percent(),
            self.refused,
            self.wrong_percent(),
            self.wrong,
            self.refused_as_expected,
            self.refusals_expected
        )
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}
