//! The budgets file: `{"budgets": [{"id"?, "principal" | "group", "tool" | "class" |
//! "action_group", "calls", "per_s", "concurrent"}]}`, closed, checked against the registry.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use cedar_policy::EntityUid;
use escepine_contract::{Principal, SideEffectClass};
use escepine_policy::BoundRegistry;
use serde::Deserialize;
use serde_json::Value;

/// Whose calls a budget counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// Every principal's (neither `principal` nor `group` given).
    Everyone,
    /// One principal's (`"principal": "Agent::\"…\""`).
    Principal(Principal),
    /// The calls of every principal whose entity has this ancestor in the runtime's entities
    /// (`"group": "Team::\"…\""`), counted together.
    Group(EntityUid),
}

/// Which tools' calls a budget counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every tool (none of `tool`, `class`, `action_group` given).
    Every,
    /// One tool, by id.
    Tool(String),
    /// Every tool of a side-effect class.
    Class(SideEffectClass),
    /// Every tool whose Cedar action is in this action group (the schema's action hierarchy).
    ActionGroup(EntityUid),
}

/// One budget of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Its id: the file's `id`, or `budgets/<index>`.
    pub id: String,
    /// Whose calls it counts.
    pub subject: Subject,
    /// Which tools' calls it counts.
    pub target: Target,
    /// At most this many calls: for ever, or within `per_s`.
    pub calls: Option<u64>,
    /// The sliding window `calls` counts in, in seconds.
    pub per_s: Option<u64>,
    /// At most this many calls in flight at once.
    pub concurrent: Option<u64>,
}

/// The budgets a runtime enforces ([`crate::RuntimeBuilder::budgets`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budgets {
    /// In the file's order (a call refused by several is refused by the first).
    pub budgets: Vec<Budget>,
}

/// Why a budgets file was refused: the file, the JSON pointer, the rule.
#[derive(Debug, thiserror::Error)]
pub enum BudgetsError {
    /// The file cannot be read.
    #[error("{}: cannot read the budgets file: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not strict JSON (not JSON, or a key given twice).
    #[error("{}: the budgets file: {source}", file.display())]
    Json {
        /// The file.
        file: PathBuf,
        /// The reader's error.
        source: escepine_contract::strict_json::StrictJsonError,
    },
    /// A value breaks a rule.
    #[error("{}: {}: {rule}", file.display(), if pointer.is_empty() { "(the document)" } else { pointer })]
    Invalid {
        /// The file.
        file: PathBuf,
        /// The JSON pointer of the value (empty: the whole document).
        pointer: String,
        /// The rule broken.
        rule: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    budgets: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: Option<String>,
    principal: Option<String>,
    group: Option<String>,
    tool: Option<String>,
    class: Option<String>,
    action_group: Option<String>,
    calls: Option<u64>,
    per_s: Option<u64>,
    concurrent: Option<u64>,
}

impl Budgets {
    /// Read and check the budgets file at `path` against `registry`.
    ///
    /// # Errors
    /// [`BudgetsError`], naming the file, the JSON pointer and the rule: an unknown field, a
    /// principal or group that does not parse, both of them, more than one of `tool`, `class`
    /// and `action_group`, an unknown tool, class or action group, no limit, `per_s` without
    /// `calls`, a zero window, a repeated id.
    pub fn load(path: &Path, registry: &BoundRegistry) -> Result<Self, BudgetsError> {
        let text = std::fs::read_to_string(path).map_err(|source| BudgetsError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        let value: Value = escepine_contract::strict_json::from_str(&text).map_err(|source| {
            BudgetsError::Json {
                file: path.to_path_buf(),
                source,
            }
        })?;
        Self::from_value(&value, path, registry)
    }

    /// Check the budgets document `value` (read from `file`, which errors name) against
    /// `registry`.
    ///
    /// # Errors
    /// As [`Budgets::load`].
    pub fn from_value(
        value: &Value,
        file: &Path,
        registry: &BoundRegistry,
    ) -> Result<Self, BudgetsError> {
        let invalid = |pointer: String, rule: String| BudgetsError::Invalid {
            file: file.to_path_buf(),
            pointer,
            rule,
        };
        let doc =
            Document::deserialize(value).map_err(|e| invalid(String::new(), e.to_string()))?;
        let mut budgets: Vec<Budget> = Vec::with_capacity(doc.budgets.len());
        for (i, raw) in doc.budgets.iter().enumerate() {
            let at = format!("/budgets/{i}");
            let entry = Entry::deserialize(raw).map_err(|e| invalid(at.clone(), e.to_string()))?;
            let budget = check(entry, i, registry).map_err(|(field, rule)| {
                invalid(field.map_or(at.clone(), |f| format!("{at}/{f}")), rule)
            })?;
            if budgets.iter().any(|b| b.id == budget.id) {
                return Err(invalid(
                    format!("{at}/id"),
                    format!(
                        "the id `{}` is already taken by an earlier budget",
                        budget.id
                    ),
                ));
            }
            budgets.push(budget);
        }
        Ok(Self { budgets })
    }
}

/// The field (none: the entry) and the rule broken.
type Broken = (Option<&'static str>, String);

fn check(e: Entry, index: usize, registry: &BoundRegistry) -> Result<Budget, Broken> {
    let subject = match (e.principal, e.group) {
        (Some(_), Some(_)) => {
            return Err((
                None,
                "names both `principal` and `group`; a budget counts one of them".into(),
            ))
        }
        (Some(p), None) => Subject::Principal(
            Principal::from_str(&p).map_err(|err| (Some("principal"), err.to_string()))?,
        ),
        (None, Some(g)) => Subject::Group(EntityUid::from_str(&g).map_err(|err| {
            (
                Some("group"),
                format!("`{g}` is not a Cedar entity uid (`Team::\"id\"`): {err}"),
            )
        })?),
        (None, None) => Subject::Everyone,
    };
    let named = [&e.tool, &e.class, &e.action_group]
        .iter()
        .filter(|f| f.is_some())
        .count();
    if named > 1 {
        return Err((
            None,
            "names more than one of `tool`, `class` and `action_group`; a budget counts one".into(),
        ));
    }
    let target = if let Some(tool) = e.tool {
        if registry.get(&tool).is_none() {
            return Err((
                Some("tool"),
                format!("no registered tool is named `{tool}`"),
            ));
        }
        Target::Tool(tool)
    } else if let Some(class) = e.class {
        let parsed = SideEffectClass::parse(&class).ok_or_else(|| {
            let known: Vec<&str> = SideEffectClass::ALL.iter().map(|c| c.as_str()).collect();
            (
                Some("class"),
                format!(
                    "`{class}` is not a side-effect class (one of {})",
                    known.join(", ")
                ),
            )
        })?;
        Target::Class(parsed)
    } else if let Some(group) = e.action_group {
        Target::ActionGroup(
            action_group(&group, registry).map_err(|rule| (Some("action_group"), rule))?,
        )
    } else {
        Target::Every
    };
    if e.calls.is_none() && e.concurrent.is_none() {
        return Err((
            None,
            "sets no limit; give `calls` (with `per_s` for a window) or `concurrent`".into(),
        ));
    }
    match e.per_s {
        Some(_) if e.calls.is_none() => {
            return Err((
                Some("per_s"),
                "a window counts `calls`, which is missing".into(),
            ))
        }
        Some(0) => return Err((Some("per_s"), "a window lasts at least one second".into())),
        _ => {}
    }
    Ok(Budget {
        id: e.id.unwrap_or_else(|| format!("budgets/{index}")),
        subject,
        target,
        calls: e.calls,
        per_s: e.per_s,
        concurrent: e.concurrent,
    })
}

/// The action group `name` (`readers` or `Action::"readers"`), which must be an action of the
/// registry's schema that some registered tool's action belongs to or is.
fn action_group(name: &str, registry: &BoundRegistry) -> Result<EntityUid, String> {
    let text = if name.contains("::") {
        name.to_string()
    } else {
        format!("Action::{}", Value::String(name.to_string()))
    };
    let uid = EntityUid::from_str(&text)
        .map_err(|err| format!("`{name}` is not an action group name: {err}"))?;
    if !registry.cedar().schema.actions().any(|a| *a == uid) {
        return Err(format!("`{name}` is not an action of the Cedar schema"));
    }
    Ok(uid)
}
