//! README's snippets: fenced code blocks whose info string marks what they are.
//!
//! - ```` ```rust file=hello-agent/src/main.rs ````: the whole content of a file, at that path
//!   relative to the directory beside the clone (the first word stays the language, so the block
//!   renders as usual);
//! - ```` ```sh run=hello-agent ````: commands run with `bash` in that directory, in README
//!   order, which must exit 0;
//! - ```` ```text output=hello-agent ````: lines the previous `run` block of that directory
//!   prints on stdout, in this order (other lines may come between); a line ending in ` …`
//!   stands for any line starting with what precedes the `…`.
//!
//! Every other block is prose.

use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// One marked block of README.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snippet {
    /// A file's whole content.
    File {
        /// Where the file goes, relative to the directory beside the clone.
        path: PathBuf,
        /// Its content.
        text: String,
        /// The 1-based line of the block in README.
        line: usize,
    },
    /// Commands run in `dir`.
    Run {
        /// The directory, relative to the directory beside the clone.
        dir: PathBuf,
        /// The `bash` script.
        script: String,
        /// The 1-based line of the block in README.
        line: usize,
    },
    /// Lines the previous `Run` of `dir` prints on stdout.
    Output {
        /// The directory of the `Run` block it belongs to.
        dir: PathBuf,
        /// The expected lines.
        text: String,
        /// The 1-based line of the block in README.
        line: usize,
    },
}

/// A marked block README gets wrong.
#[derive(Debug, thiserror::Error)]
pub enum SnippetError {
    /// An info-string key other than `file`, `run`, `output`.
    #[error("README.md:{line}: unknown snippet key `{key}` in the info string `{info}` (use file=, run= or output=)")]
    UnknownKey {
        /// The block's line.
        line: usize,
        /// The key.
        key: String,
        /// The whole info string.
        info: String,
    },
    /// More than one key on one block.
    #[error("README.md:{line}: the info string `{info}` marks the block twice; give one of file=, run=, output=")]
    TwoMarks {
        /// The block's line.
        line: usize,
        /// The whole info string.
        info: String,
    },
    /// A path that leaves the directory beside the clone, or is empty.
    #[error("README.md:{line}: `{path}` must be a relative path without `..` (it is placed beside the clone)")]
    BadPath {
        /// The block's line.
        line: usize,
        /// The path as written.
        path: String,
    },
    /// Two blocks for one file.
    #[error("README.md:{line}: `{}` is given twice (first at line {first})", path.display())]
    Duplicate {
        /// The second block's line.
        line: usize,
        /// The first block's line.
        first: usize,
        /// The file.
        path: PathBuf,
    },
    /// An `output` block with no `run` block of its directory before it.
    #[error("README.md:{line}: the output of `{}` follows no `run={}` block", dir.display(), dir.display())]
    OutputWithoutRun {
        /// The block's line.
        line: usize,
        /// The directory.
        dir: PathBuf,
    },
}

/// The marked blocks of `markdown`, in order.
///
/// # Errors
/// The first badly marked block.
pub fn parse(markdown: &str) -> Result<Vec<Snippet>, SnippetError> {
    let line_of = |offset: usize| markdown[..offset].matches('\n').count() + 1;
    let mut out: Vec<Snippet> = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (event, range) in Parser::new(markdown).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                open = Some((info.to_string(), line_of(range.start), String::new()));
            }
            Event::Text(text) => {
                if let Some((_, _, body)) = open.as_mut() {
                    body.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((info, line, body)) = open.take() {
                    if let Some(s) = marked(&info, line, body)? {
                        check_against(&out, &s)?;
                        out.push(s);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The snippet a block's info string marks, if any.
fn marked(info: &str, line: usize, body: String) -> Result<Option<Snippet>, SnippetError> {
    let marks: Vec<(&str, &str)> = info
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.split_once('='))
        .collect();
    let Some(&(key, value)) = marks.first() else {
        return Ok(None);
    };
    if marks.len() > 1 {
        return Err(SnippetError::TwoMarks {
            line,
            info: info.to_string(),
        });
    }
    let path = relative(value).ok_or_else(|| SnippetError::BadPath {
        line,
        path: value.to_string(),
    })?;
    Ok(Some(match key {
        "file" => Snippet::File {
            path,
            text: body,
            line,
        },
        "run" => Snippet::Run {
            dir: path,
            script: body,
            line,
        },
        "output" => Snippet::Output {
            dir: path,
            text: body,
            line,
        },
        _ => {
            return Err(SnippetError::UnknownKey {
                line,
                key: key.to_string(),
                info: info.to_string(),
            })
        }
    }))
}

/// `value` as a relative path of normal components only.
fn relative(value: &str) -> Option<PathBuf> {
    let path = Path::new(value);
    let normal = path.components().all(|c| matches!(c, Component::Normal(_)));
    (normal && !value.is_empty()).then(|| path.to_path_buf())
}

/// A file given twice, or an output without its run.
fn check_against(before: &[Snippet], s: &Snippet) -> Result<(), SnippetError> {
    match s {
        Snippet::File { path, line, .. } => {
            let first = before.iter().find_map(|b| match b {
                Snippet::File {
                    path: p, line: l, ..
                } if p == path => Some(*l),
                _ => None,
            });
            match first {
                Some(first) => Err(SnippetError::Duplicate {
                    line: *line,
                    first,
                    path: path.clone(),
                }),
                None => Ok(()),
            }
        }
        Snippet::Output { dir, line, .. } => {
            let ran = before
                .iter()
                .any(|b| matches!(b, Snippet::Run { dir: d, .. } if d == dir));
            if ran {
                Ok(())
            } else {
                Err(SnippetError::OutputWithoutRun {
                    line: *line,
                    dir: dir.clone(),
                })
            }
        }
        Snippet::Run { .. } => Ok(()),
    }
}

/// The one edit made to a snippet: the clone README's paths name (`../escepine/…`, the
/// clone beside the reader's crates) becomes `checkout`. A longer relative path that merely
/// ends in `../escepine/` (`../../escepine/…`, from a sub-directory) is left alone.
pub fn point_at(text: &str, checkout: &Path) -> String {
    const CLONE: &str = "../escepine/";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CLONE) {
        out.push_str(&rest[..at]);
        if out.ends_with(['.', '/']) {
            out.push_str(CLONE);
        } else {
            out.push_str(&checkout.display().to_string());
            out.push('/');
        }
        rest = &rest[at + CLONE.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_blocks_are_found_in_order() {
        let md = "# t\n\n```toml file=a/Cargo.toml\n[package]\n```\n\n```sh\nnot marked\n```\n\n\
                  ```sh run=a\ncargo run\n```\n\n```text output=a\nhi\n```\n";
        let s = parse(md).expect("parses");
        assert_eq!(
            s,
            [
                Snippet::File {
                    path: "a/Cargo.toml".into(),
                    text: "[package]\n".into(),
                    line: 3
                },
                Snippet::Run {
                    dir: "a".into(),
                    script: "cargo run\n".into(),
                    line: 11
                },
                Snippet::Output {
                    dir: "a".into(),
                    text: "hi\n".into(),
                    line: 15
                },
            ]
        );
    }

    #[test]
    fn bad_marks_are_refused_with_their_line() {
        let err = |md: &str| parse(md).expect_err("refused").to_string();
        assert!(err("\n```rust file=../x.rs\n```\n").starts_with("README.md:2: `../x.rs`"));
        assert!(err("```rust name=x.rs\n```\n").contains("unknown snippet key `name`"));
        assert!(err("```text output=a\n```\n").contains("follows no `run=a` block"));
        assert!(
            err("```rust file=a.rs\n```\n\n```rust file=a.rs\n```\n").contains("first at line 1")
        );
    }

    #[test]
    fn only_the_clone_beside_is_pointed_at_the_checkout() {
        let co = Path::new("/src/escepine");
        assert_eq!(
            point_at(r#"x = { path = "../escepine/runtime" }"#, co),
            r#"x = { path = "/src/escepine/runtime" }"#
        );
        assert_eq!(
            point_at("cargo run --manifest-path ../escepine/Cargo.toml", co),
            "cargo run --manifest-path /src/escepine/Cargo.toml"
        );
        let nested = r#""$schema": "../../escepine/registry-build/record.schema.json""#;
        assert_eq!(point_at(nested, co), nested);
    }
}
