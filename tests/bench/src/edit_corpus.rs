//! The edit-corpus figure of the bench: the near-miss `edit` calls of
//! server/tools/tests/edit_corpus through the edit tool's pure function, as landed %, refused %
//! and wrong % — how often a model's imperfect quote still lands, byte for byte, and how often it
//! lands somewhere it should not.

#[path = "../../../server/tools/tests/edit_corpus/corpus.rs"]
mod corpus;

use std::path::Path;

use corpus::Figures;

/// Prints the figures; true when a target is missed (≥ 95 % landed, 0 wrong, every ambiguous
/// case refused) or the corpus cannot be read.
pub fn report() -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../server/tools/tests/edit_corpus");
    println!("\nedit corpus (near-miss edits in server/tools/tests/edit_corpus)");
    let cases = match corpus::load(&dir) {
        Ok(cases) => cases,
        Err(err) => {
            println!("  not measured: {err}");
            return true;
        }
    };
    let judged: Vec<_> = cases.iter().map(|case| (case, corpus::judge(case, &corpus::run_pure(case)))).collect();
    let figures = Figures::of(judged);
    println!(
        "  landed {:>5.1} %   refused {:>5.1} %   wrong {:>5.1} %   ({} cases, {} can land; {}/{} refusals as expected)",
        figures.landed_percent(),
        figures.refused_percent(),
        figures.wrong_percent(),
        figures.cases,
        figures.landable,
        figures.refused_as_expected,
        figures.refusals_expected
    );
    let ok = figures.landed_percent() >= 95.0
        && figures.wrong == 0
        && figures.refused_as_expected == figures.refusals_expected;
    println!("  [{}] at least 95 % landed, none wrong, ambiguous ones refused", if ok { "ok" } else { "MISSED" });
    !ok
}
