//! The edit corpus as data: near-miss `edit` and `apply_patch` calls a model makes, each a JSON
//! file in this directory with the files before, the call's arguments, and the files expected
//! after (or `{"refuse": "words the refusal must contain"}`), grouped by category. An `edit` case
//! has one file (`path`, `file`, `expected` its text after); an `apply_patch` case (`"tool":
//! "apply_patch"`) has `files` (path → text) and `expected` path → text after, `null` for a file
//! that must not exist.
//!
//! Shared, through `#[path]`, by the corpus test (server/tools/tests/edit_corpus.rs), the
//! end-to-end test through `reins run` (tests/e2e/edit_corpus.rs) and the bench command, so all
//! three judge a case the same way.

#![allow(dead_code)]

use std::collections::BTreeMap;
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
    /// Which tool the call is for.
    pub dialect: Dialect,
    /// The workspace's files before the call: path as the model names it → text.
    pub files: BTreeMap<String, String>,
    /// The call's arguments.
    pub args: Value,
    pub expected: Expected,
}

/// The two ways a model edits files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dialect {
    Edit,
    ApplyPatch,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// The files after the call, byte for byte (`None`: the file must not exist).
    Files(BTreeMap<String, Option<String>>),
    /// The call must be refused with a message containing this.
    Refuse(String),
}

/// What the call did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The files after it (every file of the case and every file it expects).
    Landed(BTreeMap<String, Option<String>>),
    Refused(String),
}

/// A case's outcome against its expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
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
    let dialect = match json["tool"].as_str() {
        None | Some("edit") => Dialect::Edit,
        Some("apply_patch") => Dialect::ApplyPatch,
        Some(other) => return Err(fail(&format!("unknown tool {other:?}"))),
    };
    let (files, expected) = match dialect {
        Dialect::Edit => {
            let path = string("path")?;
            let expected = match &json["expected"] {
                Value::String(file) => Expected::Files(BTreeMap::from([(path.clone(), Some(file.clone()))])),
                other => refusal(other).ok_or_else(|| fail("expected is neither a file nor {\"refuse\": …}"))?,
            };
            (BTreeMap::from([(path, string("file")?)]), expected)
        }
        Dialect::ApplyPatch => {
            let files = serde_json::from_value(json["files"].clone()).map_err(|err| fail(&format!("files: {err}")))?;
            let expected = match refusal(&json["expected"]) {
                Some(refuse) => refuse,
                None => Expected::Files(
                    serde_json::from_value(json["expected"].clone())
                        .map_err(|err| fail(&format!("expected: {err}")))?,
                ),
            };
            (files, expected)
        }
    };
    Ok(Case {
        name: path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default(),
        category: string("category")?,
        description: string("description")?,
        dialect,
        files,
        args: json["args"].clone(),
        expected,
    })
}

fn refusal(expected: &Value) -> Option<Expected> {
    expected["refuse"].as_str().map(|words| Expected::Refuse(words.to_string()))
}

impl Case {
    /// The paths whose text after the call is judged: the case's files and the expected ones.
    pub fn judged_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.files.keys().cloned().collect();
        if let Expected::Files(expected) = &self.expected {
            paths.extend(expected.keys().filter(|path| !self.files.contains_key(*path)).cloned());
        }
        paths
    }

    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self.dialect {
            Dialect::Edit => "edit",
            Dialect::ApplyPatch => "apply_patch",
        }
    }
}

/// Runs `case` through the pure function behind its tool.
pub fn run_pure(case: &Case) -> Outcome {
    let landed = match case.dialect {
        Dialect::Edit => {
            let edits: Vec<reins_tools::Edit> = match serde_json::from_value(case.args["edits"].clone()) {
                Ok(edits) => edits,
                Err(err) => return Outcome::Refused(format!("bad corpus args: {err}")),
            };
            let replace_all = case.args["replaceAll"].as_bool().unwrap_or(false);
            let Some((path, file)) = case.files.iter().next() else {
                return Outcome::Refused("bad corpus case: no file".into());
            };
            reins_tools::apply_edits(file, &edits, replace_all, path)
                .map(|applied| BTreeMap::from([(path.clone(), Some(applied.text))]))
        }
        Dialect::ApplyPatch => {
            let input = case.args["input"].as_str().unwrap_or_default();
            reins_tools::apply_patch_to(input, &case.files).map(|patched| patched.files)
        }
    };
    match landed {
        Ok(mut files) => {
            let judged = case.judged_paths();
            files.retain(|path, _| judged.contains(path));
            for path in judged {
                files.entry(path).or_insert(None);
            }
            Outcome::Landed(files)
        }
        Err(message) => Outcome::Refused(message),
    }
}

pub fn judge(case: &Case, outcome: &Outcome) -> Grade {
    match (&case.expected, outcome) {
        (Expected::Files(expected), Outcome::Landed(actual))
            if expected.iter().all(|(path, text)| actual.get(path).is_some_and(|landed| landed == text))
                && actual.iter().all(|(path, text)| {
                    expected.get(path).map_or(case.files.get(path) == text.as_ref(), |want| want == text)
                }) =>
        {
            Grade::Landed
        }
        (Expected::Files(_), Outcome::Refused(_)) => Grade::Refused,
        (Expected::Refuse(words), Outcome::Refused(message)) if message.contains(words.as_str()) => {
            Grade::RefusedAsExpected
        }
        _ => Grade::Wrong,
    }
}

impl Figures {
    pub fn of<'c>(judged: impl IntoIterator<Item = (&'c Case, Grade)>) -> Figures {
        let mut figures = Figures::default();
        for (case, grade) in judged {
            figures.cases += 1;
            match case.expected {
                Expected::Files(_) => figures.landable += 1,
                Expected::Refuse(_) => figures.refusals_expected += 1,
            }
            match grade {
                Grade::Landed => figures.landed += 1,
                Grade::Refused => figures.refused += 1,
                Grade::RefusedAsExpected => figures.refused_as_expected += 1,
                Grade::Wrong => figures.wrong += 1,
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

/// The figures of each (dialect, category), in order.
pub fn per_category<'c>(judged: impl IntoIterator<Item = (&'c Case, Grade)>) -> BTreeMap<(Dialect, String), Figures> {
    let mut groups: BTreeMap<(Dialect, String), Vec<(&'c Case, Grade)>> = BTreeMap::new();
    for (case, grade) in judged {
        groups.entry((case.dialect, case.category.clone())).or_default().push((case, grade));
    }
    groups.into_iter().map(|(key, judged)| (key, Figures::of(judged))).collect()
}
