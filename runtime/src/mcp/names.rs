//! How an MCP tool name becomes a tool id, and back.
//!
//! MCP tool names may hold upper-case letters, `-` and `.` (`^[A-Za-z0-9_.-]{1,128}$`); a tool id
//! may not (`^[a-z][a-z0-9_]*$`). [`tool_id_for`] is the one mapping both sides use:
//! `escepine import mcp` names a draft record by it, and the `mcp-stdio` transport calls the MCP
//! tool whose name is the record's tool id, or else the one tool whose name maps to it.

/// The tool id an MCP tool name maps to: camelCase boundaries become `_`, letters become
/// lower-case, and every character outside `[a-z0-9_]` becomes `_` (`word-count` →
/// `word_count`, `getWeather` → `get_weather`, `fs.read` → `fs_read`).
///
/// The result is not always a valid tool id (a name starting with a digit, say); the
/// registration rules report that.
pub fn tool_id_for(mcp_name: &str) -> String {
    let mut out = String::with_capacity(mcp_name.len() + 4);
    let mut prev: Option<char> = None;
    for c in mcp_name.chars() {
        if c.is_ascii_uppercase() {
            if prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit()) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            out.push(c);
        } else {
            out.push('_');
        }
        prev = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::tool_id_for;

    #[test]
    fn names_map_to_ids() {
        assert_eq!(tool_id_for("word-count"), "word_count");
        assert_eq!(tool_id_for("lookup_city"), "lookup_city");
        assert_eq!(tool_id_for("getWeather"), "get_weather");
        assert_eq!(tool_id_for("HTTPGet"), "httpget");
        assert_eq!(tool_id_for("fs.read2File"), "fs_read2_file");
        assert_eq!(tool_id_for("2fa"), "2fa");
    }
}
