//! Diagnostics: what is wrong, where (file, JSON pointer, line and column), and which rule.
//!
//! A diagnostic is an error (the input is refused), a warning (accepted, but likely wrong) or
//! a note (accepted; something a reviewer should see). Only errors fail a check.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};

use crate::locate;
use crate::rule::Rule;

/// The text of a source file, shared by all diagnostics pointing into it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The file's path.
    pub path: PathBuf,
    /// The file's text.
    pub text: Arc<String>,
}

impl SourceFile {
    /// A source file from its path and text.
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            text: Arc::new(text.into()),
        }
    }
}

/// How serious a diagnostic is. Only [`Severity::Error`] refuses the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Severity {
    /// A rule is broken: the input is refused.
    #[default]
    Error,
    /// Accepted, but probably not what was meant.
    Warning,
    /// Accepted; worth a reviewer's attention (a reviewed exemption, say).
    Note,
}

impl Severity {
    /// The label printed before the diagnostic (`error`, `warning`, `note`).
    pub const fn label(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Note => "note",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One problem (or remark) found in one file.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    /// The rule broken (or, for a warning or a note, the rule that remarks).
    pub rule: Rule,
    /// Error, warning or note.
    pub severity: Severity,
    /// The file.
    pub file: PathBuf,
    /// The JSON pointer inside the file (for JSON files).
    pub pointer: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
    /// Byte range in the file's text, when known.
    pub span: Option<(usize, usize)>,
    /// 1-based line and column of the span's start, when known.
    pub line_col: Option<(usize, usize)>,
    source: Option<SourceFile>,
}

impl Diagnostic {
    /// A diagnostic about a whole file.
    pub fn file(rule: Rule, file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        Self {
            rule,
            severity: Severity::Error,
            file: file.as_ref().to_path_buf(),
            pointer: None,
            message: message.into(),
            help: None,
            span: None,
            line_col: None,
            source: None,
        }
    }

    /// A diagnostic at a JSON pointer of a JSON source file; the span is found in its text.
    pub fn at(rule: Rule, src: &SourceFile, pointer: &str, message: impl Into<String>) -> Self {
        let span = locate::span_of(&src.text, pointer);
        let mut d = Self::file(rule, &src.path, message).with_source(src.clone(), span);
        d.pointer = Some(pointer.to_string());
        d
    }

    /// A diagnostic at a byte range of a source file (Cedar files).
    pub fn at_span(
        rule: Rule,
        src: &SourceFile,
        span: Option<(usize, usize)>,
        message: impl Into<String>,
    ) -> Self {
        Self::file(rule, &src.path, message).with_source(src.clone(), span)
    }

    fn with_source(mut self, src: SourceFile, span: Option<(usize, usize)>) -> Self {
        if let Some((start, _)) = span {
            self.line_col = Some(locate::line_col(&src.text, start));
        }
        self.span = span;
        self.source = Some(src);
        self
    }

    /// Make this diagnostic a warning: reported, but the input is accepted.
    pub fn warning(mut self) -> Self {
        self.severity = Severity::Warning;
        self
    }

    /// Make this diagnostic a note: reported, but the input is accepted.
    pub fn note(mut self) -> Self {
        self.severity = Severity::Note;
        self
    }

    /// Whether this diagnostic refuses the input.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Add a hint on how to fix the problem.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// `file:line:col` (or `file`) where the problem is.
    pub fn location(&self) -> String {
        match self.line_col {
            Some((l, c)) => format!("{}:{l}:{c}", self.file.display()),
            None => self.file.display().to_string(),
        }
    }

    /// Render the diagnostic the way Rust users know: header, source line, caret, help.
    pub fn render(&self) -> String {
        let report = Report(self);
        let mut out = String::new();
        let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
            .with_context_lines(1)
            .with_width(100);
        if handler.render_report(&mut out, &report).is_err() {
            out = format!("{self}\n");
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.location())?;
        if !self.is_error() {
            write!(f, "{}: ", self.severity)?;
        }
        write!(f, "[{}] {}", self.rule, self.message)?;
        if let Some(p) = &self.pointer {
            write!(f, " (at {})", if p.is_empty() { "/" } else { p })?;
        }
        Ok(())
    }
}

/// Adapter presenting a [`Diagnostic`] to miette.
struct Report<'a>(&'a Diagnostic);

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if !d.is_error() {
            write!(f, "{}: ", d.severity)?;
        }
        write!(f, "{}: {}", d.location(), d.message)?;
        if let Some(p) = &d.pointer {
            write!(f, " (at {})", if p.is_empty() { "/" } else { p })?;
        }
        Ok(())
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.0.rule.id()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.0.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Note => miette::Severity::Advice,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0
            .help
            .as_ref()
            .map(|h| Box::new(h.as_str()) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        match (&self.0.source, self.0.span) {
            (Some(src), Some(_)) => Some(src.text.as_ref() as &String as &dyn miette::SourceCode),
            _ => None,
        }
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let (start, len) = self.0.span?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(self.0.rule.id().to_string()),
            SourceSpan::from((start, len)),
        ))))
    }
}

/// Every problem found in one run, in file order.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// No problems.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a problem.
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    /// Add every problem of another collection.
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    /// Whether nothing was found (no error, warning or note).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many diagnostics were found, warnings and notes included.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// How many errors were found: what refuses the input.
    pub fn error_count(&self) -> usize {
        self.items.iter().filter(|d| d.is_error()).count()
    }

    /// Whether some error was found (warnings and notes do not count).
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// The warnings and notes only.
    pub fn remarks(&self) -> Diagnostics {
        Diagnostics {
            items: self
                .items
                .iter()
                .filter(|d| !d.is_error())
                .cloned()
                .collect(),
        }
    }

    /// The problems.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Whether some diagnostic (of any severity) names `rule`.
    pub fn has(&self, rule: Rule) -> bool {
        self.items.iter().any(|d| d.rule == rule)
    }

    /// Every diagnostic rendered, without a summary line (for warnings and notes of an input
    /// that was accepted).
    pub fn render_each(&self) -> String {
        let mut out = String::new();
        for d in &self.items {
            out.push_str(&d.render());
            out.push('\n');
        }
        out
    }

    /// Sort by file, then position, so output is stable.
    pub fn sort(&mut self) {
        self.items
            .sort_by(|a, b| (&a.file, a.span, a.rule).cmp(&(&b.file, b.span, b.rule)));
    }

    /// All diagnostics rendered, then a summary line counting them.
    pub fn render(&self) -> String {
        let mut out = self.render_each();
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// `error: 3 problems in 2 files` (errors only), then `, 1 warning, 2 notes` when there
    /// are any.
    pub fn summary(&self) -> String {
        let mut files: Vec<&PathBuf> = self
            .items
            .iter()
            .filter(|d| d.is_error())
            .map(|d| &d.file)
            .collect();
        files.sort();
        files.dedup();
        let n = self.error_count();
        let mut s = format!(
            "error: {n} problem{} in {} file{}",
            if n == 1 { "" } else { "s" },
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let count = |sev: Severity| self.items.iter().filter(|d| d.severity == sev).count();
        for (sev, word) in [(Severity::Warning, "warning"), (Severity::Note, "note")] {
            let k = count(sev);
            if k > 0 {
                s.push_str(&format!(", {}", plural(k, word)));
            }
        }
        s
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.items {
            writeln!(f, "{d}")?;
        }
        write!(f, "{}", self.summary())
    }
}

impl std::error::Error for Diagnostics {}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

/// Keeps `NamedSource` in the public vocabulary for callers that build their own reports.
pub type Named = NamedSource<String>;
