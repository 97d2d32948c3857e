//! The edit corpus (tests/edit_corpus/*.json) through the pure function behind `edit`: at least
//! 95 % of the cases that can land land byte for byte, none lands wrong, and every case that
//! must be refused is refused, saying what the case expects.

#[path = "edit_corpus/corpus.rs"]
mod corpus;

use std::collections::BTreeMap;
use std::path::Path;

use corpus::{Case, Expected, Figures, Outcome, Verdict};

fn load_corpus() -> Vec<Case> {
    corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/edit_corpus")).unwrap()
}

/// A line per case that did not go as expected, with what happened.
fn misses(judged: &[(&Case, Outcome, Verdict)]) -> String {
    judged
        .iter()
        .filter(|(_, _, verdict)| matches!(verdict, Verdict::Refused | Verdict::Wrong))
        .map(|(case, outcome, verdict)| format!("{verdict:?} {} ({}): {outcome:?}\n", case.name, case.description))
        .collect()
}

#[test]
fn corpus_lands_what_it_can_and_never_lands_wrong() {
    let cases = load_corpus();
    let judged: Vec<(&Case, Outcome, Verdict)> = cases
        .iter()
        .map(|case| {
            let outcome = corpus::run_pure(case);
            let verdict = corpus::judge(case, &outcome);
            (case, outcome, verdict)
        })
        .collect();
    let figures = Figures::of(judged.iter().map(|(case, _, verdict)| (*case, *verdict)));
    let misses = misses(&judged);
    eprintln!("{figures}\n{misses}");
    assert_eq!(figures.wrong, 0, "{figures}\n{misses}");
    assert_eq!(figures.refused_as_expected, figures.refusals_expected, "{figures}\n{misses}");
    assert!(figures.landed_percent() >= 95.0, "{figures}\n{misses}");
}

#[test]
fn corpus_covers_every_category_with_enough_near_misses() {
    let cases = load_corpus();
    let mut per_category: BTreeMap<&str, usize> = BTreeMap::new();
    for case in &cases {
        *per_category.entry(case.category.as_str()).or_default() += 1;
    }
    let near_misses = cases
        .iter()
        .filter(|case| !matches!(case.category.as_str(), "exact" | "traps" | "ambiguous"))
        .filter(|case| matches!(case.expected, Expected::File(_)))
        .count();
    assert!(near_misses >= 60, "only {near_misses} near-miss cases that can land: {per_category:?}");
    for category in [
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
    ] {
        assert!(per_category.get(category).is_some_and(|&count| count >= 3), "category {category}: {per_category:?}");
    }
}

#[test]
fn loose_landings_say_how_they_matched() {
    // Every case that lands without an exact match must carry a note for the model. Line endings
    // are not a loose match: matching folds CRLF to LF and the splice restores each line's own.
    let exact_kinds = ["exact", "traps", "line_endings"];
    for case in load_corpus().iter().filter(|case| !exact_kinds.contains(&case.category.as_str())) {
        let edits: Vec<reins_tools::Edit> = serde_json::from_value(case.args["edits"].clone()).unwrap();
        if let Ok(applied) = reins_tools::apply_edits(&case.file, &edits, false, &case.path) {
            assert!(!applied.notes.is_empty(), "{} landed without a note", case.name);
        }
    }
}
