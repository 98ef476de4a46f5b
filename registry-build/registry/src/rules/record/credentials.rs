//! Credentials: a governed tool accepts none (`accepts_credentials: false`) and names the
//! secrets the sandbox injects (`auth.secrets`).

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fields::Object;
use crate::rule::Rule;
use crate::rules::names;

/// `accepts_credentials`: the boolean `false`.
pub(super) fn accepts_credentials(rec: &Object<'_>, diags: &mut Diagnostics) {
    match rec.require("accepts_credentials", diags) {
        Some(Value::Bool(false)) | None => {}
        Some(Value::Bool(true)) => diags.push(
            Diagnostic::at(
                Rule::AcceptsCredentials,
                rec.src,
                &rec.ptr("accepts_credentials"),
                "governed tools accept no credentials: `accepts_credentials` must be false",
            )
            .help(
                "declare the secrets the tool needs by name in `auth.secrets`; the sandbox \
                 injects them",
            ),
        ),
        Some(_) => rec.wrong("accepts_credentials", "the boolean `false`", diags),
    }
}

/// `auth`: only `secrets`, a list of distinct secret names.
pub(super) fn auth(a: &Object<'_>, diags: &mut Diagnostics) -> Option<Vec<String>> {
    let src = a.src;
    let mut ok = true;
    for key in a.map.keys().filter(|k| k.as_str() != "secrets") {
        diags.push(
            Diagnostic::at(
                Rule::AuthNamesOnly,
                src,
                &a.ptr(key),
                format!(
                    "`auth.{key}`: auth declares secret names only; inline values and other keys \
                     are rejected"
                ),
            )
            .help(
                "write \"auth\": { \"secrets\": [\"NAME\"] } and provide the value to the \
                 runtime's secret source",
            ),
        );
        ok = false;
    }
    let secrets = a.require("secrets", diags)?;
    let at = a.ptr("secrets");
    let Some(items) = secrets.as_array() else {
        diags.push(Diagnostic::at(
            Rule::AuthNamesOnly,
            src,
            &at,
            "`auth.secrets` must be a list of secret names",
        ));
        return None;
    };
    let mut names: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ptr = format!("{at}/{i}");
        let problem = match item.as_str() {
            Some(n) if names.iter().any(|x| x == n) => Diagnostic::at(
                Rule::AuthNamesOnly,
                src,
                &ptr,
                format!("`{n}` is listed twice"),
            ),
            Some(n) if names::is_secret_name(n) => {
                names.push(n.to_string());
                continue;
            }
            Some(_) => Diagnostic::at(
                Rule::AuthNamesOnly,
                src,
                &ptr,
                "a secret name must match ^[A-Z][A-Z0-9_]*$ (and not start with ESCEPINE_); this \
                 looks like a value, not a name",
            )
            .help("never put a credential in a record; name it, e.g. \"FIRECRAWL_API_KEY\""),
            None => Diagnostic::at(
                Rule::AuthNamesOnly,
                src,
                &ptr,
                "a secret name must be a string; inline values are rejected",
            ),
        };
        diags.push(problem);
        ok = false;
    }
    ok.then_some(names)
}
