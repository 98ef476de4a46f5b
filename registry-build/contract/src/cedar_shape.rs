//! Cedar shapes checked while the program compiles: the type a `.cedarschema` declares for
//! an action's `context.input`, against the one a Rust payload implies.
//!
//! The build step writes each declared action's context as a [`Shape`]
//! ([`CedarAction::CONTEXT`](crate::CedarAction::CONTEXT)); `#[derive(Payload)]` writes the
//! shape its struct implies ([`Payload::CEDAR_SHAPE`](crate::Payload::CEDAR_SHAPE)), reading
//! the fields as written; and `#[tool]` compares the two in a constant ([`check`]), so a
//! mismatch fails the build with a message naming the attribute, both types and the schema
//! file. Field types the derive cannot read (a type of the crate, a `with` attribute, a
//! flattened or renamed-all struct) are [`Shape::Unchecked`]: the tool's generated test, which
//! compares the whole schema the program derives, still covers them.
//!
//! The reading follows the JSON Schema a payload has and the Cedar type registration gives it:
//! `String` and `Url` → `String`; Rust integers → `Long`; `bool` → `Bool`; `f32`/`f64` →
//! `decimal`; `Vec`, `VecDeque`, `HashSet`, `BTreeSet` → `Set`; `Option<T>` → an optional
//! attribute of `T`'s shape; `Box<T>` → `T`'s shape.

/// A Cedar type, as far as the build can know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `String`.
    String,
    /// `Long`.
    Long,
    /// `Bool`.
    Bool,
    /// The `decimal` extension type.
    Decimal,
    /// The `ipaddr` extension type.
    IpAddr,
    /// The `datetime` extension type.
    DateTime,
    /// The `duration` extension type.
    Duration,
    /// `Set<T>`.
    Set(&'static Shape),
    /// A record type.
    Record(&'static [Attr]),
    /// An entity type (never a payload's).
    Entity(&'static str),
    /// Not known at build time: matches any shape.
    Unchecked,
}

/// Whether a record's attribute is present in every value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Required (`name: T`).
    Required,
    /// Optional (`name?: T`).
    Optional,
    /// Not known at build time (a `skip_serializing_if` without `default`, say).
    Unchecked,
}

/// One attribute of a record shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// The attribute's name (a payload field's wire name).
    pub name: &'static str,
    /// Whether it is required.
    pub presence: Presence,
    /// Its type.
    pub shape: Shape,
}

/// The longest message [`check`] writes; longer ones end with `…`.
const MESSAGE_BYTES: usize = 1024;

/// What [`check`] found: empty when the shapes agree.
#[derive(Debug, Clone, Copy)]
pub struct Mismatch {
    buf: [u8; MESSAGE_BYTES],
    len: usize,
    cut: bool,
}

impl Mismatch {
    const fn new() -> Self {
        Self {
            buf: [0; MESSAGE_BYTES],
            len: 0,
            cut: false,
        }
    }

    /// Whether the shapes disagree.
    pub const fn found(&self) -> bool {
        self.len > 0
    }

    /// The message (empty when the shapes agree).
    pub const fn as_str(&self) -> &str {
        let (text, _) = self.buf.split_at(self.len);
        match core::str::from_utf8(text) {
            Ok(s) => s,
            Err(_) => "the shapes disagree",
        }
    }

    /// Appends `s`, whole characters only: once the buffer is full, an ellipsis ends it and
    /// nothing more is written.
    const fn push(&mut self, s: &str) {
        const DOTS: &[u8] = "…".as_bytes();
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && !self.cut {
            let width = match bytes[i] {
                b if b < 0x80 => 1,
                b if b >= 0xF0 => 4,
                b if b >= 0xE0 => 3,
                _ => 2,
            };
            if self.len + width + DOTS.len() > MESSAGE_BYTES {
                let mut j = 0;
                while j < DOTS.len() {
                    self.buf[self.len] = DOTS[j];
                    self.len += 1;
                    j += 1;
                }
                self.cut = true;
                return;
            }
            let mut k = 0;
            while k < width {
                self.buf[self.len] = bytes[i + k];
                self.len += 1;
                k += 1;
            }
            i += width;
        }
    }

    /// Appends the Cedar spelling of `shape`.
    const fn push_shape(&mut self, shape: &Shape) {
        match shape {
            Shape::String => self.push("String"),
            Shape::Long => self.push("Long"),
            Shape::Bool => self.push("Bool"),
            Shape::Decimal => self.push("decimal"),
            Shape::IpAddr => self.push("ipaddr"),
            Shape::DateTime => self.push("datetime"),
            Shape::Duration => self.push("duration"),
            Shape::Set(inner) => {
                self.push("Set<");
                self.push_shape(inner);
                self.push(">");
            }
            Shape::Record(attrs) => {
                if attrs.is_empty() {
                    self.push("{}");
                    return;
                }
                self.push("{ ");
                let mut i = 0;
                while i < attrs.len() {
                    if i > 0 {
                        self.push(", ");
                    }
                    self.push(attrs[i].name);
                    if matches!(attrs[i].presence, Presence::Optional) {
                        self.push("?");
                    }
                    self.push(": ");
                    self.push_shape(&attrs[i].shape);
                    i += 1;
                }
                self.push(" }");
            }
            Shape::Entity(name) => self.push(name),
            Shape::Unchecked => self.push("_"),
        }
    }
}

/// Compares the declared context of `action` (in `schema_file`) with `input`, the shape of
/// the tool's input: `context.input` must have the input's shape, attribute by attribute.
pub const fn check(action: &str, schema_file: &str, context: &Shape, input: &Shape) -> Mismatch {
    let mut m = Mismatch::new();
    if matches!(context, Shape::Unchecked) || matches!(input, Shape::Unchecked) {
        return m;
    }
    let declared = match context {
        Shape::Record(attrs) => find(attrs, "input"),
        _ => None,
    };
    let Some(declared) = declared else {
        m.push("the context of Cedar action `");
        m.push(action);
        m.push("` in `");
        m.push(schema_file);
        m.push("` has no `input` attribute, and the input of this `#[tool]` is ");
        m.push_shape(input);
        m.push("; declare `context: { input: ");
        m.push_shape(input);
        m.push(" }` (`cargo test` prints the whole declaration)");
        return m;
    };
    compare(
        &mut m,
        action,
        schema_file,
        "context.input",
        &declared.shape,
        input,
    );
    m
}

/// The attribute `name` of `attrs`.
const fn find(attrs: &'static [Attr], name: &str) -> Option<&'static Attr> {
    let mut i = 0;
    while i < attrs.len() {
        if same(attrs[i].name, name) {
            return Some(&attrs[i]);
        }
        i += 1;
    }
    None
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The start of every message: where the declaration is.
const fn lead(m: &mut Mismatch, action: &str, schema_file: &str, path: &str) {
    m.push("the context of Cedar action `");
    m.push(action);
    m.push("` in `");
    m.push(schema_file);
    m.push("` does not match the input of this `#[tool]`: `");
    m.push(path);
    m.push("`");
}

/// The end of every message: what to do.
const HINT: &str = "; declare the action's context as its input implies (`cargo test` runs the \
                    tool's generated test, which prints the declaration)";

/// Writes the first difference between `declared` (at `path` of the context) and `payload`.
const fn compare(
    m: &mut Mismatch,
    action: &str,
    schema_file: &str,
    path: &str,
    declared: &Shape,
    payload: &Shape,
) {
    match (declared, payload) {
        (Shape::Unchecked, _) | (_, Shape::Unchecked) => {}
        (Shape::Set(d), Shape::Set(p)) => compare(m, action, schema_file, path, d, p),
        (Shape::Record(d), Shape::Record(p)) => {
            let mut i = 0;
            while i < d.len() && !m.found() {
                let want = &d[i];
                match find(p, want.name) {
                    None => {
                        lead(m, action, schema_file, path);
                        m.push(" declares `");
                        m.push(want.name);
                        m.push("` (");
                        m.push_shape(&want.shape);
                        m.push("), which the input has no field for");
                        m.push(HINT);
                    }
                    Some(got) => {
                        let presence_differs = matches!(
                            (want.presence, got.presence),
                            (Presence::Required, Presence::Optional)
                                | (Presence::Optional, Presence::Required)
                        );
                        if presence_differs {
                            lead(m, action, schema_file, path);
                            m.push(" declares `");
                            m.push(want.name);
                            m.push("` ");
                            m.push(if matches!(want.presence, Presence::Required) {
                                "required, and the input's field is optional"
                            } else {
                                "optional (`?`), and the input's field is required"
                            });
                            m.push(HINT);
                        } else {
                            compare_inner(m, action, schema_file, path, want, got);
                        }
                    }
                }
                i += 1;
            }
            let mut j = 0;
            while j < p.len() && !m.found() {
                if find(d, p[j].name).is_none() {
                    lead(m, action, schema_file, path);
                    m.push(" has no attribute `");
                    m.push(p[j].name);
                    m.push("`, and the input has that field (");
                    m.push_shape(&p[j].shape);
                    m.push(")");
                    m.push(HINT);
                }
                j += 1;
            }
        }
        _ => {
            if !same_kind(declared, payload) {
                lead(m, action, schema_file, path);
                m.push(" is ");
                m.push_shape(declared);
                m.push(", and the input has ");
                m.push_shape(payload);
                m.push(" there");
                m.push(HINT);
            }
        }
    }
}

/// [`compare`] of one attribute's types, naming the attribute.
const fn compare_inner(
    m: &mut Mismatch,
    action: &str,
    schema_file: &str,
    path: &str,
    want: &Attr,
    got: &Attr,
) {
    let mut probe = Mismatch::new();
    compare(
        &mut probe,
        action,
        schema_file,
        path,
        &want.shape,
        &got.shape,
    );
    if !probe.found() {
        return;
    }
    match (&want.shape, &got.shape) {
        // A difference inside a nested record or set names its own path.
        (Shape::Record(_), Shape::Record(_)) | (Shape::Set(_), Shape::Set(_)) => {
            lead(m, action, schema_file, path);
            m.push(" has `");
            m.push(want.name);
            m.push(": ");
            m.push_shape(&want.shape);
            m.push("`, and the input's field is ");
            m.push_shape(&got.shape);
            m.push(HINT);
        }
        _ => {
            lead(m, action, schema_file, path);
            m.push(" declares `");
            m.push(want.name);
            m.push("` as ");
            m.push_shape(&want.shape);
            m.push(", and the input's field is ");
            m.push_shape(&got.shape);
            m.push(HINT);
        }
    }
}

/// Whether two shapes that are neither sets nor records are the same type.
const fn same_kind(a: &Shape, b: &Shape) -> bool {
    match (a, b) {
        (Shape::String, Shape::String)
        | (Shape::Long, Shape::Long)
        | (Shape::Bool, Shape::Bool)
        | (Shape::Decimal, Shape::Decimal)
        | (Shape::IpAddr, Shape::IpAddr)
        | (Shape::DateTime, Shape::DateTime)
        | (Shape::Duration, Shape::Duration) => true,
        (Shape::Entity(x), Shape::Entity(y)) => same(x, y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: Shape = Shape::Record(&[Attr {
        name: "text",
        presence: Presence::Required,
        shape: Shape::String,
    }]);

    const CONTEXT: Shape = Shape::Record(&[Attr {
        name: "input",
        presence: Presence::Required,
        shape: TEXT,
    }]);

    fn message(input: &Shape) -> String {
        check("text_stats", "policies/schema.cedarschema", &CONTEXT, input)
            .as_str()
            .to_string()
    }

    #[test]
    fn the_same_shape_agrees_and_unchecked_agrees_with_anything() {
        assert!(!check("a", "f", &CONTEXT, &TEXT).found());
        assert!(!check("a", "f", &CONTEXT, &Shape::Unchecked).found());
        assert!(!check("a", "f", &Shape::Unchecked, &TEXT).found());
        // Inside a set, a field the derive could not read matches the declared record.
        let tags = Shape::Record(&[Attr {
            name: "input",
            presence: Presence::Required,
            shape: Shape::Record(&[Attr {
                name: "tags",
                presence: Presence::Required,
                shape: Shape::Set(&TEXT),
            }]),
        }]);
        let unread = Shape::Record(&[Attr {
            name: "tags",
            presence: Presence::Unchecked,
            shape: Shape::Set(&Shape::Unchecked),
        }]);
        assert!(!check("a", "f", &tags, &unread).found());
        let longs = Shape::Record(&[Attr {
            name: "tags",
            presence: Presence::Required,
            shape: Shape::Set(&Shape::Long),
        }]);
        let m = check("a", "f", &tags, &longs);
        assert!(
            m.as_str()
                .contains("has `tags: Set<{ text: String }>`, and the input's field is Set<Long>"),
            "{}",
            m.as_str()
        );
    }

    #[test]
    fn each_difference_names_the_attribute_and_both_types() {
        let long = Shape::Record(&[Attr {
            name: "text",
            presence: Presence::Required,
            shape: Shape::Long,
        }]);
        let m = message(&long);
        assert!(m.starts_with("the context of Cedar action `text_stats` in `policies/schema.cedarschema` does not match the input of this `#[tool]`: `context.input` declares `text` as String, and the input's field is Long"), "{m}");
        let optional = Shape::Record(&[Attr {
            name: "text",
            presence: Presence::Optional,
            shape: Shape::String,
        }]);
        assert!(message(&optional)
            .contains("declares `text` required, and the input's field is optional"));
        let extra = Shape::Record(&[
            Attr {
                name: "text",
                presence: Presence::Required,
                shape: Shape::String,
            },
            Attr {
                name: "lang",
                presence: Presence::Optional,
                shape: Shape::Set(&Shape::String),
            },
        ]);
        assert!(message(&extra)
            .contains("has no attribute `lang`, and the input has that field (Set<String>)"));
        assert!(message(&Shape::Record(&[]))
            .contains("declares `text` (String), which the input has no field for"));
        let no_input = check("a", "f", &Shape::Record(&[]), &TEXT);
        assert!(
            no_input.as_str().contains("has no `input` attribute"),
            "{}",
            no_input.as_str()
        );
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary() {
        let mut m = Mismatch::new();
        for _ in 0..400 {
            m.push("é-");
        }
        assert!(m.as_str().ends_with('…'));
        assert!(m.as_str().len() <= MESSAGE_BYTES);
    }
}
