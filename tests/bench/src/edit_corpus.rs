//! The edit-corpus figures of the bench: the near-miss `edit` and `apply_patch` calls of
//! server/tools/tests/edit_corpus through the tools' pure functions, as landed %, refused % and
//! wrong % per dialect and per category — how often a model's imperfect quote still lands, byte
//! for byte, and how often it lands somewhere it should not.

#[path = "../../../server/tools/tests/edit_corpus/corpus.rs"]
mod corpus;

use std::path::Path;

use corpus::{Dialect, Figures};

/// Prints the figures; true when a target is missed (in each dialect: ≥ 95 % landed, 0 wrong,
/// every case that must be refused refused) or the corpus cannot be read.
pub fn report() -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../server/tools/tests/edit_corpus");
    println!("\nedit corpus (near-miss edits in server/tools/tests/edit_corpus), per dialect and category");
    let cases = match corpus::load(&dir) {
        Ok(cases) => cases,
        Err(err) => {
            println!("  not measured: {err}");
            return true;
        }
    };
    let judged: Vec<_> = cases.iter().map(|case| (case, corpus::judge(case, &corpus::run_pure(case)))).collect();
    println!(
        "  {:<12} {:<20} {:>5} {:>9} {:>9} {:>9} {:>9}",
        "dialect", "category", "cases", "landed", "refused", "wrong", "refusals"
    );
    let line = |dialect: &str, category: &str, figures: &Figures| {
        // Landed and refused are shares of the cases that can land; a category of refusals has none.
        let share = |percent: f64| {
            if figures.landable == 0 { "—".to_string() } else { format!("{percent:.1}%") }
        };
        println!(
            "  {:<12} {:<20} {:>5} {:>9} {:>9} {:>8.1}% {:>4}/{:<4}",
            dialect,
            category,
            figures.cases,
            share(figures.landed_percent()),
            share(figures.refused_percent()),
            figures.wrong_percent(),
            figures.refused_as_expected,
            figures.refusals_expected
        );
    };
    for ((dialect, category), figures) in corpus::per_category(judged.iter().copied()) {
        line(name(dialect), &category, &figures);
    }
    let mut ok = true;
    for dialect in [Dialect::Edit, Dialect::ApplyPatch] {
        let figures = Figures::of(judged.iter().copied().filter(|(case, _)| case.dialect == dialect));
        line(name(dialect), "all", &figures);
        ok &= figures.landed_percent() >= 95.0
            && figures.wrong == 0
            && figures.refused_as_expected == figures.refusals_expected;
    }
    println!(
        "  [{}] in each dialect at least 95 % landed, none wrong, the ones to refuse refused",
        if ok { "ok" } else { "MISSED" }
    );
    !ok
}

fn name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Edit => "edit",
        Dialect::ApplyPatch => "apply_patch",
    }
}
