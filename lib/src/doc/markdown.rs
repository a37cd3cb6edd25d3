//! Markdown structure read with a CommonMark parser, so links inside code
//! blocks or HTML comments are not mistaken for relations.

use pulldown_cmark::{Event, Parser, Tag};

/// The destinations of the inline and reference links of a body, in order.
pub fn links(body: &str) -> Vec<String> {
    Parser::new(body)
        .filter_map(|ev| match ev {
            Event::Start(Tag::Link { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_links_outside_code() {
        let body = "See [a](../x/a.md) and [b][r].\n\n```\n[no](c.md)\n```\n\n[r]: b.md#part\n";
        assert_eq!(super::links(body), vec!["../x/a.md", "b.md#part"]);
    }
}
