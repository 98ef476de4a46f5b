//! `escepine import mcp`: draft tool records from an existing MCP server's `tools/list`.
//!
//! [`listing`] starts the server — by default in a sandbox ([`listing::list_sandboxed`], the
//! runtime's own Linux sandbox: no host environment, no network, the given read-only paths),
//! or on the root of an OCI image ([`listing::list_in_image`]), or as a plain host process when
//! asked ([`listing::list_unsandboxed`], with a cleared
//! environment: only `PATH` (the tools' `PATH`), `LANG` and the host's `HOME`) — initializes an
//! MCP session on its stdio and reads every page of `tools/list` **as raw JSON**
//! (`rpc::RawClient`): one malformed tool (say, without `inputSchema`) never aborts the
//! listing. [`draft::draft`] turns each tool into a draft record on its own (pure: no I/O):
//!
//! - **Identity.** `tool_id` is the MCP name mapped by `names::tool_id_for`
//!   (`word-count` → `word_count`; the `mcp-stdio` transport maps it back); `version` is the
//!   server's `serverInfo.version` when it is semver (else `0.1.0`, noted); `description` is the
//!   tool's description **verbatim** (none: a decision); the tool's `title` (else its
//!   `annotations.title`) becomes the record's `title`, its `annotations.openWorldHint` the
//!   record's `open_world`, both verbatim, so that the transport can say which of them changed.
//! - **Pin.** `endpoint.definition_sha256` is the digest of the whole listed tool
//!   (`definition::definition_sha256`); a server whose listing later differs is refused
//!   before any `tools/call`.
//! - **Schemas, mechanically into the subset** ([`schema::normalize`], each change noted with
//!   its pointer): `$schema` of another draft dropped; root `definitions` renamed `$defs`;
//!   nullable types become `T` and the property optional; `format` on a non-string dropped (the
//!   bounds of a fixed-width integer format kept); an object with declared properties and
//!   nothing said of others closed with `additionalProperties: false` (and a root without
//!   properties: a tool taking no arguments). A missing `outputSchema` becomes the text shape
//!   `transport::text_output_schema`, `{"text": …}`, with a REVIEW note: such a tool
//!   registers mechanically and its text results pass the output gate as `{"text": …}`.
//! - **Decisions** ([`Decision`], each naming the tool and the JSON pointer, in the draft's
//!   `$comment` as `DECIDE <pointer>: …` and printed): a property-less or open object (an open
//!   map such as `headers` or `env`: never closed to `{}`, which would let no value be sent); a
//!   tool without `inputSchema` (drafted with no arguments, to confirm); a property the
//!   credential-name rule catches (it cannot be renamed, since the server receives the payload
//!   verbatim: remove it, or exempt it with `"x-not-credential": "<why>"` after review);
//!   combinators, tuples and other schema parts without a mechanical rewrite; a missing
//!   description; and the **class** of every tool not annotated `readOnlyHint: true` — only
//!   that hint gives a class (`read-only`); any other is left as a placeholder that `escepine
//!   check` refuses, never a guessed `compensatable`. Whatever else the registry's own rules
//!   (`registry-build`'s record check, run on each draft) refuse is listed as a decision too.
//! - **Placeholders with conservative defaults, marked for review**: `timeout_ms` 30000, no
//!   retry (`max_attempts` 1), `on_failure` `["halt"]`, no secrets, no egress (no network at
//!   all), file system `workspace`; `sandbox_profile.read_only` lists the `--read-only` paths
//!   (each checked by the envelope's rule, [`escepine_registry::host_path`]: absolute or relative
//!   to the working directory, never normalised, so `a/../b` is refused as `check` refuses it)
//!   and the paths the arguments name.
//! - **An ambiguous listing is refused**: a `tools/list` naming a tool twice, or giving a key
//!   twice in one object at any depth, fails the import as a whole (nothing is written),
//!   naming the tool and the pointer ([`escepine_runtime::mcp::rpc`]); the pin check refuses
//!   it the same way before any `tools/call`.
//! - **Endpoint**: `mcp-stdio` with the command and its arguments as given
//!   ([`endpoint::EndpointDraft`]): a path made absolute against the working directory
//!   *lexically*, never resolving a symlink (a virtualenv's `python` stays the virtualenv's), or
//!   the bare binary name when it is a `[[bin]]` of the workspace; an argument naming an
//!   existing path relative to the working directory (`server.py`) made absolute too, and bound
//!   read-only in the sandbox ([`endpoint::AbsoluteArg`], [`EndpointDraft::read_only`]; the
//!   module [`endpoint`] says which arguments), each noted as `CHANGED /endpoint/args/<i>`. A
//!   server imported from an
//!   image ([`listing::list_in_image`]) gets `endpoint.image` and the command inside the image
//!   exactly as given (none: the image's `Entrypoint` and `Cmd`).
//!
//! - **A remote server** (`escepine import mcp --url URL`): listed over streamable HTTP by the
//!   runtime's own client (`escepine_runtime::remote`), authenticated as asked; its drafts name
//!   `"transport": "mcp-http"`, the URL, the server's name for the tool (`endpoint.tool`), the
//!   pin, and `endpoint.auth` with the secret names it uses (declared in `auth.secrets`); the
//!   profile's `egress` lists the server's origin (and the token endpoint's).
//!
//! Every note goes into the draft's top-level `$comment` (a list of strings; records allow
//! `$comment`), `DRAFT`/`CHANGED`/`REVIEW`/`DECIDE`-prefixed, so the file says what was decided
//! for it and what is left to decide.

pub mod draft;
pub mod endpoint;
pub mod listing;
mod model;
pub mod schema;

pub use draft::{draft, Draft};
pub use endpoint::{AbsoluteArg, EndpointDraft, RemoteDraft};
pub use model::{Decision, ImportError, ServerTools, DRAFT_TIMEOUT_MS, NEEDS_DECISION_DIR};
