//! Every registration rule, with its stable id.

use std::fmt;

macro_rules! rules {
    ($( $(#[$doc:meta])* $variant:ident = $id:literal ),* $(,)?) => {
        /// A registration rule. Every diagnostic names the rule it enforces by [`Rule::id`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule {
            $( $(#[$doc])* $variant, )*
        }

        impl Rule {
            /// Every rule.
            pub const ALL: &'static [Rule] = &[ $( Rule::$variant, )* ];

            /// The stable id printed in diagnostics (`record/unknown-field`).
            pub const fn id(self) -> &'static str {
                match self { $( Rule::$variant => $id, )* }
            }
        }
    };
}

rules! {
    /// A file could not be read.
    Io = "io/read",
    /// A file is not valid JSON.
    JsonSyntax = "json/syntax",
    /// A key is given twice in one object of a JSON file (readers disagree on which copy
    /// counts).
    JsonDuplicateKey = "json/duplicate-key",
    /// A record is not a JSON object.
    RecordShape = "record/shape",
    /// A field no rule knows (closed records).
    UnknownField = "record/unknown-field",
    /// A required field is missing.
    MissingField = "record/missing-field",
    /// A field given under both of its spellings (`tool_id` and `name`).
    DuplicateSpelling = "record/duplicate-spelling",
    /// A field of the wrong JSON type or value.
    FieldType = "record/field-type",
    /// `tool_id` does not match `^[a-z][a-z0-9_]*$`.
    ToolIdPattern = "tool-id/pattern",
    /// `tool_id` is a reserved name (an action group).
    ToolIdReserved = "tool-id/reserved",
    /// Two records share a `tool_id`.
    ToolIdDuplicate = "tool-id/unique",
    /// A `tool_id` or a Cedar action has no Rust name in the generated code (`crate`, `self`,
    /// `super`, or the name of a generated module such as `actions`).
    ToolIdRustName = "tool-id/rust-name",
    /// Two tool ids map to one `ToolId` variant, or two Cedar actions to one marker type.
    RustNameUnique = "rust-name/unique",
    /// `version` is not semver.
    VersionSemver = "version/semver",
    /// `description` is empty.
    DescriptionEmpty = "description/non-empty",
    /// `cedar_action` is not `Action::"<tool_id>"`.
    CedarAction = "cedar-action/own-action",
    /// An `action_groups` entry is malformed or collides with a reserved name or a tool id.
    ActionGroup = "action-groups/name",
    /// `side_effect_class` is not one of the three classes.
    SideEffectClass = "side-effect-class/known",
    /// A compensatable tool without `compensation`.
    CompensationMissing = "compensation/required",
    /// `compensation` on a tool that is not compensatable.
    CompensationUnexpected = "compensation/only-compensatable",
    /// `compensation.tool` is not registered.
    CompensationInverse = "compensation/inverse-registered",
    /// A compensation pointer does not resolve in this tool's schemas.
    CompensationPointer = "compensation/pointer-resolves",
    /// A compensation pointer resolves to a type the inverse does not accept.
    CompensationType = "compensation/type-compatible",
    /// A required field of the inverse is not mapped, or a mapped field is unknown to it.
    CompensationFields = "compensation/fields-mapped",
    /// `accepts_credentials` is not `false`.
    AcceptsCredentials = "accepts-credentials/false",
    /// `timeout_ms` is not an integer > 0.
    Timeout = "timeout-ms/positive",
    /// `retry.max_attempts` < 1 or `retry.backoff_ms` < 0 (or either not an integer).
    Retry = "retry/budget",
    /// `retry.max_attempts` above the bound (`RetryPolicy::MAX_ATTEMPTS`).
    RetryAttemptsBound = "retry/max-attempts-bound",
    /// `retry.backoff_ms` above the bound (`RetryPolicy::MAX_BACKOFF_MS`).
    RetryBackoffBound = "retry/backoff-bound",
    /// `on_failure` is empty or names an unknown or repeated outcome.
    OnFailure = "on-failure/outcomes",
    /// `endpoint.transport` is unknown.
    EndpointTransport = "endpoint/transport",
    /// `endpoint.command` does not resolve.
    EndpointResolvable = "endpoint/resolvable",
    /// `endpoint.sha256` is not 64 lower-case hex digits.
    EndpointDigest = "endpoint/sha256",
    /// `endpoint.image` is not a well-formed image reference (`host:port/name@sha256:…` or
    /// `oci:/dir@sha256:…`).
    EndpointImage = "endpoint/image",
    /// `endpoint.image` is a tag or a bare name, not pinned by a digest.
    EndpointImagePinned = "endpoint/image-pinned",
    /// `endpoint.image` comes from a source no `images` entry of the envelope admits.
    EndpointImageSource = "endpoint/image-source",
    /// `endpoint.sha256` beside `endpoint.image`: the image's digest pins the command.
    EndpointDigestWithImage = "endpoint/sha256-with-image",
    /// A command inside an image that is neither an absolute path nor a bare name.
    EndpointImageCommand = "endpoint/image-command",
    /// `endpoint.definition_sha256` is not 64 lower-case hex digits, or is given on a transport
    /// other than `mcp-stdio`.
    EndpointDefinitionDigest = "endpoint/definition-sha256",
    /// An `mcp-http` endpoint's `url` (or a token endpoint) is not `https` (plain `http` only
    /// on loopback), carries user information or a fragment, or is missing.
    EndpointRemoteUrl = "endpoint/remote-url",
    /// An `mcp-http` endpoint has no `tool` (the server's name for it), or a field of a local
    /// endpoint (`command`, `args`, `sha256`, `image`), or a local endpoint has `url`, `tool`
    /// or `auth`.
    EndpointRemoteFields = "endpoint/remote-fields",
    /// `endpoint.auth` is not exactly one of `bearer`, `oauth`, `token_exchange`, well formed,
    /// or names a secret the record's `auth.secrets` does not declare.
    EndpointRemoteAuth = "endpoint/remote-auth",
    /// The origin of an `mcp-http` endpoint's URL (or of its token endpoint) is not covered by
    /// the record's `sandbox_profile.egress`.
    EndpointRemoteEgress = "endpoint/remote-egress",
    /// An `mcp-http` endpoint with `sandbox_profile.read_only` or `workspace_inputs`: no local
    /// code runs, so there is no sandbox to give them to.
    EndpointRemoteSandbox = "endpoint/remote-sandbox",
    /// A script endpoint (`#!`) with neither an image nor `sandbox_profile.read_only`: its
    /// sandbox holds only the interpreter (a warning).
    EndpointScriptRuntime = "endpoint/script-runtime",
    /// `data_labels` is not a closed object of `output` and `reads` lists of distinct label
    /// names (lower-case words joined by `-`).
    DataLabels = "data-labels/shape",
    /// A label of `data_labels` the deployment envelope's `labels` does not list.
    DataLabelUnknown = "data-labels/unknown",
    /// `title` is not a non-empty string.
    Title = "title/non-empty",
    /// `auth` holds anything but secret names.
    AuthNamesOnly = "auth/names-only",
    /// An egress entry is a URL or malformed.
    EgressEntry = "sandbox/egress-entry",
    /// An egress entry is outside the deployment envelope.
    EgressEnvelope = "sandbox/within-envelope",
    /// A reserved egress word in the wrong file: `public` in a sandbox profile, or
    /// `authorized-urls` in the deployment envelope.
    EgressReservedWord = "egress/reserved-word",
    /// `authorized-urls` in a profile while the deployment envelope has no `public` entry.
    AuthorizedUrlsPublic = "sandbox/authorized-urls-public",
    /// `authorized-urls` on a tool whose input schema has no per-URL field.
    AuthorizedUrlsField = "sandbox/authorized-urls-field",
    /// `filesystem` is not `workspace`.
    Filesystem = "sandbox/filesystem",
    /// `isolation` is not a known tier (`namespaces`, `gvisor`).
    Isolation = "sandbox/isolation",
    /// A tool's isolation tier is weaker than the envelope's `isolation.min` for its
    /// side-effect class or one of its action groups.
    IsolationEnvelope = "sandbox/isolation-within-envelope",
    /// A `sandbox_profile.read_only` entry is not an absolute, lexically normal path, or is
    /// listed twice.
    ReadOnlyPath = "sandbox/read-only-path",
    /// A `sandbox_profile.read_only` path outside every `read_only` prefix of the envelope.
    ReadOnlyEnvelope = "sandbox/read-only-within-envelope",
    /// A `sandbox_profile.read_only` path that does not exist at registration.
    ReadOnlyExists = "sandbox/read-only-exists",
    /// A `sandbox_profile.workspace_inputs` entry is not `{"name", "max_bytes", "required"?}`
    /// with a file name, a bound from 1 byte to 16 MiB and a name not listed before.
    WorkspaceInput = "sandbox/workspace-input",
    /// Workspace inputs on a tool whose transport starts no fresh sandbox per call (only
    /// `stdio-json` tools take them).
    WorkspaceInputTransport = "sandbox/workspace-input-transport",
    /// A schema is not well-formed against the 2020-12 meta-schema (or cannot be compiled).
    SchemaWellFormed = "schema/well-formed",
    /// A schema declares a draft other than 2020-12.
    SchemaDraft = "schema/draft-2020-12",
    /// The schema root is not `type: object`.
    SchemaRootObject = "schema/root-object",
    /// An object schema without `additionalProperties: false`.
    SchemaClosed = "schema/closed",
    /// A keyword outside the supported subset (`oneOf`, `patternProperties`, …).
    SchemaSubset = "schema/subset",
    /// A `null` type (or a type union).
    SchemaNullType = "schema/no-null",
    /// A `$ref` that is remote, dangling, recursive, or not into root `$defs`.
    SchemaRef = "schema/local-ref",
    /// A keyword other than an annotation beside `$ref`.
    SchemaRefSiblings = "schema/ref-siblings",
    /// A schema with no type (it accepts anything).
    SchemaTyped = "schema/typed",
    /// `required` names a property that is not declared.
    SchemaRequired = "schema/required-declared",
    /// `x-authorize-each` on something other than a top-level list of URL strings or of
    /// objects with exactly one URL field (judged where the payload meets it, `$ref` followed).
    SchemaAuthorizeEach = "schema/authorize-each",
    /// A tool whose action a policy constrains through `context.url` (or whose profile lists
    /// `authorized-urls`) has a URL field that is neither its one per-URL field nor the URL of
    /// an element of a list marked `x-authorize-each`.
    PerUrlShape = "input/per-url-shape",
    /// An input property name is a credential word.
    CredentialName = "input/credential-free",
    /// `x-not-credential` that is not a non-empty reason string on a property of the input
    /// schema.
    NotCredential = "input/not-credential-reason",
    /// A reviewed exemption from the credential-name rule (a note, never an error).
    CredentialExemption = "input/credential-exemption",
    /// An input property caught by the credential-name rule that is a session's name
    /// (`session_name`, a plain string): a note, never an error.
    RecognisedSessionName = "input/recognised-session-name",
    /// An input property caught by the credential-name rule that is a pagination token
    /// (`next_token`, a plain string beside a pagination field such as `limit`): a note, never
    /// an error.
    RecognisedPaginationToken = "input/recognised-pagination-token",
    /// An input property caught by the credential-name rule that is a user name to look up
    /// (`username`, a plain string with no password-like sibling): a note, never an error.
    RecognisedUserLookup = "input/recognised-user-lookup",
    /// The envelope file is malformed.
    Envelope = "envelope/shape",
    /// An envelope `images` entry is malformed, or admits plain HTTP from a host that is not a
    /// loopback address.
    EnvelopeImages = "envelope/images",
    /// An envelope `read_only` entry is not an absolute, lexically normal path.
    EnvelopeReadOnly = "envelope/read-only",
    /// The envelope's `labels` is not an object of label names to non-empty descriptions.
    EnvelopeLabels = "envelope/labels",
    /// The envelope's `isolation` is not `{"min": <tier>, "for": [<class or action group>, …]}`.
    EnvelopeIsolation = "envelope/isolation",
    /// An envelope `remote_ca_files` entry is not an absolute, lexically normal path.
    EnvelopeRemoteCa = "envelope/remote-ca-files",
    /// The user `.cedarschema` does not parse or merge.
    CedarSchema = "cedar/schema",
    /// A `.cedar` file does not parse.
    PolicySyntax = "cedar/policy-syntax",
    /// A policy fails strict validation.
    PolicyValidation = "cedar/strict-validation",
    /// Two policies share an id.
    PolicyId = "cedar/policy-id",
    /// A policy compares an enum-valued attribute with a string literal outside its values.
    PolicyEnumLiteral = "cedar/enum-literal",
    /// A file or directory is missing.
    Missing = "input/missing",
    /// An SOP file is not shaped as the format requires (not an object, a missing field, a
    /// field of the wrong JSON type, an unknown state `kind`, an empty list).
    SopShape = "sop/shape",
    /// A field the SOP format does not know (closed format).
    SopUnknownField = "sop/unknown-field",
    /// `sop_id` does not match `^[a-z][a-z0-9_]*$` or cannot be a Rust module name.
    SopId = "sop/id",
    /// Two SOP files share a `sop_id`.
    SopIdUnique = "sop/id-unique",
    /// An SOP's `version` is not semver.
    SopVersion = "sop/version",
    /// A state name does not match `^[a-z][a-z0-9_]*$`, or two names (or a name and a generated
    /// item) map to the same Rust type name.
    SopStateName = "sop/state-name",
    /// An execution step names a tool the registry does not hold.
    SopUnknownTool = "sop/unknown-tool",
    /// A step's `on_failure` is not one of the outcomes its tool allows.
    SopOutcome = "sop/outcome-not-allowed",
    /// A constraint (or a branch schema) names a field the payload does not have.
    SopConstraintField = "sop/constraint-field",
    /// A constraint (or a branch schema) contradicts the field's type or allowed values.
    SopConstraintType = "sop/constraint-type",
    /// A constraint (or a branch schema) is not a well-formed, self-contained JSON Schema.
    SopConstraintSchema = "sop/constraint-schema",
    /// `start`, a `next`, an `otherwise` or a branch `next` names an undefined state.
    SopUndefinedState = "sop/undefined-state",
    /// A state no path from `start` reaches.
    SopUnreachableState = "sop/unreachable-state",
    /// A state from which no path leads to a terminal state (or no terminal state at all).
    SopNoTerminalPath = "sop/no-terminal-path",
    /// `require_per_url_authorization` on a step whose tool's URLs are not each authorized: no
    /// single URL field, or a URL list not marked `x-authorize-each`.
    SopPerUrl = "sop/per-url-list-unmarked",
    /// A decision branch pointer that is not `/<state>/input/…` or `/<state>/output/…` of an
    /// execution state run before the decision on every path, or does not resolve in its schema.
    SopBranchPointer = "sop/branch-pointer",
    /// Decisions that lead to each other without an execution step between: the run would loop
    /// forever on unchanged data.
    SopDecisionCycle = "sop/decision-cycle",
    /// A policy test file is not shaped as the format requires (not an object, a missing
    /// field, a field of the wrong type, a field the closed format does not know).
    PolicyTestShape = "policy-test/shape",
    /// A case's `principal` is not of the form `Type::"id"`.
    PolicyTestPrincipal = "policy-test/principal",
    /// A case names a tool the registry does not hold.
    PolicyTestTool = "policy-test/unknown-tool",
    /// Two cases of one file share a name.
    PolicyTestName = "policy-test/name-unique",
    /// A case's `entities` do not conform to the Cedar schema.
    PolicyTestEntities = "policy-test/entities",
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}
