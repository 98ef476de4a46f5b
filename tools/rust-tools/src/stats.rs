//! `text_stats`, a Rust-first tool: counts of a text, computed and nothing else.

use std::collections::BTreeMap;

use escepine_contract::ToolError;
use escepine_registry_macros::{tool, Payload};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The payload of `text_stats`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct TextStatsInput {
    /// The text to measure.
    #[schemars(length(max = 100_000))]
    pub text: String,
    /// How many of the most frequent words to list (none when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub top_words: Option<u32>,
}

/// One word and how often it occurs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct WordCount {
    /// The word, lower-cased.
    pub word: String,
    /// Its occurrences.
    pub count: u64,
}

/// The output of `text_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Payload)]
#[serde(deny_unknown_fields)]
pub struct TextStatsOutput {
    /// Unicode scalar values.
    pub characters: u64,
    /// Words: maximal runs of alphanumeric characters (and apostrophes inside them).
    pub words: u64,
    /// Lines (a final line without a newline counts).
    pub lines: u64,
    /// The most frequent words, most frequent first (ties alphabetical).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_words: Vec<WordCount>,
}

/// Count the characters, words and lines of a text, and list its most frequent words.
#[tool(
    id = "text_stats",
    version = "1.0.0",
    side_effect = "read-only",
    timeout_ms = 5000,
    retry(max_attempts = 1, backoff_ms = 0),
    on_failure(halt, halt_and_escalate)
)]
pub async fn text_stats(input: TextStatsInput) -> Result<TextStatsOutput, ToolError> {
    Ok(measure(&input.text, input.top_words.unwrap_or(0) as usize))
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn measure(text: &str, top: usize) -> TextStatsOutput {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0;
    for w in words(text) {
        total += 1;
        *counts.entry(w).or_default() += 1;
    }
    let mut ranked: Vec<WordCount> = counts
        .into_iter()
        .map(|(word, count)| WordCount { word, count })
        .collect();
    ranked.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.word.cmp(&b.word)));
    ranked.truncate(top);
    TextStatsOutput {
        characters: text.chars().count() as u64,
        words: total,
        lines: text.lines().count() as u64,
        top_words: ranked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ranks() {
        let out = measure("The cat and the hat.\nThe end", 2);
        assert_eq!(out.characters, 28);
        assert_eq!(out.words, 7);
        assert_eq!(out.lines, 2);
        assert_eq!(
            out.top_words,
            [
                WordCount {
                    word: "the".into(),
                    count: 3
                },
                WordCount {
                    word: "and".into(),
                    count: 1
                },
            ]
        );
    }

    #[test]
    fn empty_text() {
        let out = measure("", 5);
        assert_eq!((out.characters, out.words, out.lines), (0, 0, 0));
        assert!(out.top_words.is_empty());
    }
}
