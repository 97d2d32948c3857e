//! Carrying the file's indentation over to `newText` when `oldText` matched only after ignoring
//! indentation: the block was sent shallower or deeper, or with spaces where the file has tabs
//! (or the other way round).
//!
//! The model's indentation maps to the file's by one linear rule in columns, learnt from the
//! matched lines: `file = (scale * model + offset)`, a tab counting as [`TAB_COLUMNS`]. A place
//! whose lines do not all follow one rule is not the same block re-indented, so it is no match.
//! Only leading whitespace is touched; alignment inside a line stays as the model wrote it.

/// Columns a tab stands for when comparing tab and space indentation.
const TAB_COLUMNS: i64 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Tabs,
    Spaces,
}

/// `file columns = (numerator * model columns + offset) / denominator`, in the file's style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndentMap {
    numerator: i64,
    denominator: i64,
    offset: i64,
    file_style: Style,
}

impl IndentMap {
    /// The rule that takes the model's lines to the file's, from `(oldText line, file line)`
    /// pairs; `None` when the pairs follow no single rule. `old` and `new` tell the model's style
    /// and `file` the file's, when the pairs alone do not.
    pub(crate) fn infer(pairs: &[(&str, &str)], old: &str, new: &str, file: &str) -> Option<IndentMap> {
        let widths: Vec<(i64, i64)> = pairs
            .iter()
            .filter(|(model, file)| !model.trim().is_empty() && !file.trim().is_empty())
            .map(|(model, file)| (columns(leading(model)), columns(leading(file))))
            .collect();
        let file_style = pairs
            .iter()
            .map(|(_, file)| leading(file))
            .find(|indent| !indent.is_empty())
            .map(|indent| if indent.starts_with('\t') { Style::Tabs } else { Style::Spaces })
            .or_else(|| style_of(file))
            .unwrap_or(Style::Spaces);
        let Some(&(model_first, file_first)) = widths.first() else {
            return Some(IndentMap { numerator: 1, denominator: 1, offset: 0, file_style });
        };
        let lowest = widths.iter().min_by_key(|(model, _)| *model).copied().unwrap_or((0, 0));
        let highest = widths.iter().max_by_key(|(model, _)| *model).copied().unwrap_or((0, 0));
        let (numerator, denominator) = if highest.0 > lowest.0 {
            (highest.1 - lowest.1, highest.0 - lowest.0)
        } else {
            // One depth only: the shift is clear, the scale is a guess from the two styles.
            let model_text = format!("{old}\n{new}");
            match style_of(&model_text) {
                Some(model_style) if model_style != file_style => {
                    (unit(file, file_style), unit(&model_text, model_style))
                }
                _ => (1, 1),
            }
        };
        if numerator <= 0 {
            return None;
        }
        let common = gcd(numerator, denominator);
        let (numerator, denominator) = (numerator / common, denominator / common);
        let offset = file_first * denominator - numerator * model_first;
        let consistent = widths.iter().all(|&(model, file)| file * denominator == numerator * model + offset);
        consistent.then_some(IndentMap { numerator, denominator, offset, file_style })
    }

    /// `line` (without its `\n`) with its indentation mapped to the file's; a blank line stays
    /// empty.
    pub(crate) fn apply(&self, line: &str) -> String {
        let indent = leading(line);
        let content = &line[indent.len()..];
        if content.trim().is_empty() {
            return String::new();
        }
        let target = ((self.numerator * columns(indent) + self.offset) / self.denominator).max(0) as usize;
        let mut out = match self.file_style {
            Style::Tabs => {
                let tab = TAB_COLUMNS as usize;
                "\t".repeat(target / tab) + &" ".repeat(target % tab)
            }
            Style::Spaces => " ".repeat(target),
        };
        out.push_str(content);
        out
    }
}

fn leading(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn columns(indent: &str) -> i64 {
    indent.chars().map(|ch| if ch == '\t' { TAB_COLUMNS } else { 1 }).sum()
}

/// Tabs or spaces, by which starts more indented lines; `None` when no line is indented.
fn style_of(text: &str) -> Option<Style> {
    let (mut tabs, mut spaces) = (0, 0);
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        match line.as_bytes().first() {
            Some(b'\t') => tabs += 1,
            Some(b' ') => spaces += 1,
            _ => {}
        }
    }
    match (tabs, spaces) {
        (0, 0) => None,
        _ if tabs > spaces => Some(Style::Tabs),
        _ => Some(Style::Spaces),
    }
}

/// Columns of one indentation level in `text`: a tab, or the common divisor of the space
/// indentations (4 when alignment makes that meaningless).
fn unit(text: &str, style: Style) -> i64 {
    if style == Style::Tabs {
        return TAB_COLUMNS;
    }
    let divisor = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| columns(leading(line)))
        .filter(|&width| width > 0)
        .fold(0, gcd);
    if (2..=8).contains(&divisor) { divisor } else { 4 }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Infers from `(model, file)` pairs and re-indents `line`, or says "no rule".
    fn check(pairs: &[(&str, &str)], new: &str, line: &str, expected: &str) {
        let old: String = pairs.iter().map(|(model, _)| format!("{model}\n")).collect();
        let file: String = pairs.iter().map(|(_, file)| format!("{file}\n")).collect();
        let actual = match IndentMap::infer(pairs, &old, new, &file) {
            Some(map) => format!("{:?}", map.apply(line)),
            None => "no rule".to_string(),
        };
        assert_eq!(actual, expected);
    }

    #[test]
    fn shifts_spaces_uniformly() {
        check(
            &[("def f():", "    def f():"), ("    pass", "        pass")],
            "",
            "    return  1",
            r#""        return  1""#,
        );
    }

    #[test]
    fn turns_spaces_into_tabs() {
        check(&[("if x {", "\tif x {"), ("    y();", "\t\ty();")], "", "        z();", r#""\t\t\tz();""#);
        check(&[("    y();", "\t\ty();")], "    y();\n    z();", "    z();", r#""\t\tz();""#);
    }

    #[test]
    fn refuses_lines_that_follow_no_single_rule() {
        check(&[("a", "  a"), ("b", "    b")], "", "c", "no rule");
        check(&[("a", "    a"), ("  b", "  b")], "", "c", "no rule");
    }
}
