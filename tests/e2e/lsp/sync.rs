//! Document sync under load: 2,000 rapid incremental changes (CRLF, emoji, CJK, edits at line
//! ends) sent without waiting, and the server's copy must equal the client's after every burst.

use lsp_client::ClientDocument;
use serde_json::json;

use super::start;

const BURSTS: usize = 10;
const CHANGES_PER_BURST: usize = 200;

/// What an edit inserts: the awkward cases for position conversion.
const INSERTS: &[&str] = &["", "a", "😀", "中文", "\r\n", "\n", "é", "x\r\ny", "🦀🦀", "\t", "\r"];

/// A small deterministic generator, so a failure reproduces.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound.max(1)
    }
}

/// A random char boundary of `text`, a third of the time at a line end, never inside "\r\n".
fn offset(text: &str, rng: &mut Lcg) -> usize {
    let line_ends: Vec<usize> = text.match_indices(['\r', '\n']).map(|(i, _)| i).collect();
    let mut at = if !line_ends.is_empty() && rng.next(3) == 0 {
        line_ends[rng.next(line_ends.len())]
    } else {
        let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
        boundaries[rng.next(boundaries.len())]
    };
    if at > 0 && text.as_bytes()[at - 1] == b'\r' && text.as_bytes().get(at) == Some(&b'\n') {
        at -= 1;
    }
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_rapid_changes_leave_the_same_text_on_both_sides() {
    let lsp = start(&[], vec![], json!({})).await;
    let initial = "fn main() {\r\n    println!(\"héllo 😀\");\r\n}\n// 中文注释\rlast";
    lsp.open("doc.rs", "rust", initial).await;
    let uri = lsp.uri("doc.rs");
    let mut doc = ClientDocument::new(initial);
    let mut rng = Lcg(0x5eed);
    let mut version = 1;
    for burst in 0..BURSTS {
        for _ in 0..CHANGES_PER_BURST {
            let a = offset(&doc.text, &mut rng);
            let b = offset(&doc.text, &mut rng);
            let (start, end) = if a <= b { (a, b) } else { (b, a) };
            // Mostly small deletions, so the text neither vanishes nor explodes.
            let end = if end - start > 12 { start } else { end };
            let insert = INSERTS[rng.next(INSERTS.len())];
            let change = doc.replace(start, end, insert);
            version += 1;
            lsp.client
                .notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}),
                )
                .await;
        }
        let server = lsp.client.request("reins/debug/documentText", json!({"uri": uri})).await.unwrap();
        assert_eq!(server["version"], version, "burst {burst}");
        assert_eq!(server["text"].as_str().unwrap(), doc.text, "burst {burst}: texts differ");
    }
    assert!(
        doc.text.contains('\r') && doc.text.chars().any(|c| c.len_utf16() == 2),
        "the edits kept the awkward cases"
    );
}
