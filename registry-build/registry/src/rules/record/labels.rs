//! `data_labels`: the information-flow labels a tool's output brings and its reads carry
//! ([`crate::labels`]), each a label name the deployment envelope lists (when one is given).

use serde_json::Value;

use super::context::Context;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fields::Object;
use crate::labels::{name_problem, DataLabels};
use crate::rule::Rule;

/// `data_labels` (optional): a closed object of `output` and `reads`, each a list of distinct
/// label names.
pub(super) fn data_labels(
    rec: &Object<'_>,
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<DataLabels> {
    let Some(v) = rec.map.get("data_labels") else {
        return Some(DataLabels::default());
    };
    let src = rec.src;
    let Some(map) = v.as_object() else {
        diags.push(Diagnostic::at(
            Rule::DataLabels,
            src,
            "/data_labels",
            "`data_labels` must be an object of `output` and `reads` label lists",
        ));
        return None;
    };
    let before = diags.error_count();
    for key in map
        .keys()
        .filter(|k| !["output", "reads"].contains(&k.as_str()))
    {
        diags.push(
            Diagnostic::at(
                Rule::DataLabels,
                src,
                &format!("/data_labels/{key}"),
                format!("unknown field `{key}` in `data_labels`"),
            )
            .help("its fields are `output` (what the output brings) and `reads` (what the tool reads)"),
        );
    }
    let mut list = |key: &str| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        match map.get(key) {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let ptr = format!("/data_labels/{key}/{i}");
                    let Some(name) = item.as_str() else {
                        diags.push(Diagnostic::at(
                            Rule::DataLabels,
                            src,
                            &ptr,
                            "a label must be a string",
                        ));
                        continue;
                    };
                    if let Some(why) = name_problem(name) {
                        diags.push(Diagnostic::at(
                            Rule::DataLabels,
                            src,
                            &ptr,
                            format!("`{name}` is not a label name: {why}"),
                        ));
                        continue;
                    }
                    if out.iter().any(|o| o == name) {
                        diags.push(Diagnostic::at(
                            Rule::DataLabels,
                            src,
                            &ptr,
                            format!("the label `{name}` is given twice"),
                        ));
                        continue;
                    }
                    if let Some(env) = ctx.envelope {
                        if !env.labels.contains_key(name) {
                            diags.push(
                                Diagnostic::at(
                                    Rule::DataLabelUnknown,
                                    src,
                                    &ptr,
                                    format!(
                                        "the label `{name}` is not one the deployment envelope {} \
                                         lists",
                                        env.source.display()
                                    ),
                                )
                                .help(format!(
                                    "add \"{name}\": \"<what it means>\" to the envelope's `labels`"
                                )),
                            );
                            continue;
                        }
                    }
                    out.push(name.to_string());
                }
            }
            Some(_) => diags.push(Diagnostic::at(
                Rule::DataLabels,
                src,
                &format!("/data_labels/{key}"),
                format!("`data_labels.{key}` must be a list of label names"),
            )),
        }
        out
    };
    let labels = DataLabels {
        output: list("output"),
        reads: list("reads"),
    };
    (diags.error_count() == before).then_some(labels)
}
