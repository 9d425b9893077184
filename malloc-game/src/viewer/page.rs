//! The HTML page: the views as inline JSON, the viewer's script and style inline.

use super::{compare, CompareError, GameView};

const SCRIPT: &str = include_str!("viewer.js");
const STYLE: &str = include_str!("viewer.css");

/// The viewer of one game: a self-contained HTML page.
pub fn game_html(view: &GameView) -> String {
    let data = serde_json::json!({ "mode": "game", "a": view });
    page(
        &format!("{} · {} on {}", view.player, view.workload, view.hardware),
        &data,
    )
}

/// The viewer of game `a` against game `b` (the same program, hardware and game options).
pub fn compare_html(a: &GameView, b: &GameView) -> Result<String, CompareError> {
    let cmp = compare(a, b)?;
    // Column by column: a large comparison has tens of thousands of differences.
    let d = &cmp.differences;
    let data = serde_json::json!({
        "mode": "compare", "a": a, "b": b,
        "cmp": {
            "first_difference": cmp.first_difference,
            "same_decisions_s": cmp.same_decisions_s,
            "gap_s": cmp.gap_s,
            "differences": {
                "a_turn": d.iter().map(|x| x.a_turn).collect::<Vec<_>>(),
                "b_turn": d.iter().map(|x| x.b_turn).collect::<Vec<_>>(),
                "cost_s": d.iter().map(|x| super::short(x.cost_s)).collect::<Vec<_>>(),
            },
        },
    });
    Ok(page(
        &format!(
            "{} against {} · {} on {}",
            a.player, b.player, a.workload, a.hardware
        ),
        &data,
    ))
}

/// `data` as JSON text to put inside a `<script>` element of a page: every `<` written
/// `\u003c` (the same JSON string). Names in the data come from user files, and inside a
/// script element `</script` ends it while `<!--` (with `<script`) changes how the rest is
/// read, blanking the page; with no `<` left, the element's text is only the data. Every
/// page with inline data goes through here.
pub fn script_json(data: &serde_json::Value) -> String {
    // `<` appears in JSON text only inside strings, where `\u003c` means the same.
    data.to_string().replace('<', "\\u003c")
}

fn page(title: &str, data: &serde_json::Value) -> String {
    let json = script_json(data);
    let title = html_escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title>\n<style>{STYLE}</style></head>\n<body>\
         <noscript>This viewer draws with JavaScript: enable it to see the game.</noscript>\n\
         <div id=\"app\"></div>\n\
         <script type=\"application/json\" id=\"mmz-data\">{json}</script>\n\
         <script>{SCRIPT}</script>\n</body></html>\n"
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
