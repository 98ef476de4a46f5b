//! Literals of the generated code: raw strings.

/// `text` as a raw string literal (`r#"…"#`, with as many `#` as it needs), so JSON reads as
/// JSON in the generated file.
pub(crate) fn raw_str(text: &str) -> proc_macro2::Literal {
    let mut hashes = 1;
    while text.contains(&format!("\"{}", "#".repeat(hashes))) {
        hashes += 1;
    }
    let h = "#".repeat(hashes);
    format!("r{h}\"{text}\"{h}")
        .parse()
        .unwrap_or_else(|_| proc_macro2::Literal::string(text))
}
