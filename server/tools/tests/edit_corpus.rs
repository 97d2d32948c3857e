//! The edit corpus (tests/edit_corpus/*.json) through the pure functions behind `edit` and
//! `apply_patch`: in each dialect at least 95 % of the cases that can land land byte for byte,
//! none lands wrong, and every case that must be refused is refused, saying what the case expects.

#[path = "edit_corpus/corpus.rs"]
mod corpus;

use std::collections::BTreeMap;
use std::path::Path;

use corpus::{Case, Dialect, Expected, Figures, Grade, Outcome};

/// The categories both dialects cover; apply_patch adds its own (`patch_format`, `files`).
const CATEGORIES: [&str; 11] = [
    "exact",
    "trailing_whitespace",
    "indentation",
    "typography",
    "line_endings",
    "blank_lines",
    "line_numbers",
    "escapes",
    "stale_context",
    "traps",
    "ambiguous",
];

fn load_corpus() -> Vec<Case> {
    corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/edit_corpus")).unwrap()
}

/// A line per case that did not go as expected, with what happened.
fn misses(judged: &[(&Case, Outcome, Grade)]) -> String {
    judged
        .iter()
        .filter(|(_, _, grade)| matches!(grade, Grade::Refused | Grade::Wrong))
        .map(|(case, outcome, grade)| format!("{grade:?} {} ({}): {outcome:?}\n", case.name, case.description))
        .collect()
}

fn check_dialect(dialect: Dialect) {
    let cases = load_corpus();
    let judged: Vec<(&Case, Outcome, Grade)> = cases
        .iter()
        .filter(|case| case.dialect == dialect)
        .map(|case| {
            let outcome = corpus::run_pure(case);
            let grade = corpus::judge(case, &outcome);
            (case, outcome, grade)
        })
        .collect();
    let figures = Figures::of(judged.iter().map(|(case, _, grade)| (*case, *grade)));
    let misses = misses(&judged);
    eprintln!("{dialect:?}: {figures}\n{misses}");
    assert_eq!(figures.wrong, 0, "{figures}\n{misses}");
    assert_eq!(figures.refused_as_expected, figures.refusals_expected, "{figures}\n{misses}");
    assert!(figures.landed_percent() >= 95.0, "{figures}\n{misses}");
}

#[test]
fn edit_lands_what_it_can_and_never_lands_wrong() {
    check_dialect(Dialect::Edit);
}

#[test]
fn apply_patch_lands_what_it_can_and_never_lands_wrong() {
    check_dialect(Dialect::ApplyPatch);
}

#[test]
fn corpus_covers_every_category_with_enough_near_misses_in_both_dialects() {
    let cases = load_corpus();
    for dialect in [Dialect::Edit, Dialect::ApplyPatch] {
        let of_dialect: Vec<&Case> = cases.iter().filter(|case| case.dialect == dialect).collect();
        let mut per_category: BTreeMap<&str, usize> = BTreeMap::new();
        for case in &of_dialect {
            *per_category.entry(case.category.as_str()).or_default() += 1;
        }
        let near_misses = of_dialect
            .iter()
            .filter(|case| !matches!(case.category.as_str(), "exact" | "traps" | "ambiguous"))
            .filter(|case| matches!(case.expected, Expected::Files(_)))
            .count();
        assert!(near_misses >= 60, "{dialect:?}: only {near_misses} near-miss cases that can land: {per_category:?}");
        for category in CATEGORIES {
            assert!(
                per_category.get(category).is_some_and(|&count| count >= 3),
                "{dialect:?}, category {category}: {per_category:?}"
            );
        }
    }
}

#[test]
fn loose_landings_say_how_they_matched() {
    // Every case that lands without an exact match must carry a note for the model. Line endings
    // are not a loose match: matching folds CRLF to LF and the splice restores each line's own;
    // an ambiguous hunk lands only when its @@ line picks the place, exactly.
    let exact_kinds = ["exact", "traps", "line_endings", "ambiguous", "patch_format", "files"];
    let mut landed = Vec::new();
    for case in load_corpus().iter().filter(|case| !exact_kinds.contains(&case.category.as_str())) {
        let notes = match case.dialect {
            Dialect::Edit => {
                let edits: Vec<reins_tools::Edit> = serde_json::from_value(case.args["edits"].clone()).unwrap();
                let (path, file) = case.files.iter().next().unwrap();
                reins_tools::apply_edits(file, &edits, false, path).map(|applied| applied.notes)
            }
            Dialect::ApplyPatch => {
                let input = case.args["input"].as_str().unwrap();
                reins_tools::apply_patch_to(input, &case.files).map(|patched| patched.notes)
            }
        };
        if let Ok(notes) = notes {
            assert!(!notes.is_empty(), "{} landed without a note", case.name);
            landed.push(format!("{:?} {}", case.dialect, case.name));
        }
    }
    // Not vacuous: loose landings of both dialects were checked.
    for dialect in ["Edit", "ApplyPatch"] {
        let count = landed.iter().filter(|case| case.starts_with(&format!("{dialect} "))).count();
        assert!(count >= 5, "only {count} loose {dialect} cases landed: {landed:?}");
    }
}
