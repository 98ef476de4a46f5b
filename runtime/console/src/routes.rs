//! The console's routes: who is asking ([`viewer`]), then the page or the decision.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use escepine_ledger::calls::CallView;
use escepine_ledger::entry::now_ms;
use escepine_mcp::auth::Authenticated;
use escepine_runtime::approval::Verdict;
use maud::Markup;
use serde::Deserialize;

use crate::app::App;
use crate::index::Filter;
use crate::pages::{self, Ctx};
use crate::session::{self, Reach, LOGIN_COOKIE, SESSION_COOKIE};

type Shared = State<Arc<App>>;

/// How many calls a page of the list holds.
const PAGE_SIZE: usize = 50;

/// The routes of the console over `app`.
pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/calls") }))
        .route("/console.css", get(css))
        .route("/login", get(login_form).post(login))
        .route("/login/oidc", get(oidc_start))
        .route("/login/callback", get(oidc_callback))
        .route("/logout", post(logout))
        .route("/calls", get(calls))
        .route("/calls/{call_id}", get(call))
        .route("/runs", get(runs))
        .route("/runs/{run_id}", get(run))
        .route("/approvals", get(approvals))
        .route("/approvals/{call_id}/approve", post(approve))
        .route("/approvals/{call_id}/reject", post(reject))
        .route("/policies", get(policies))
        .route("/flows/{flow}", get(flow))
        .route("/flows/{flow}/declassify", post(declassify))
        .layer(axum::middleware::map_response(secure_headers))
        .with_state(app)
}

/// Headers of every answer: no script, no framing, no caching, no sniffing, no referrer.
async fn secure_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'none'; style-src 'self' 'unsafe-inline'; \
             img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        pages::CSS,
    )
        .into_response()
}

/// How the caller is known.
#[derive(Debug, Clone)]
enum Via {
    /// A browser's session cookie (its forms carry the session's CSRF token).
    Session { cookie: String, csrf: String },
    /// An `Authorization: Bearer` token (no cookie: nothing to forge across sites).
    Bearer,
}

/// The signed-in caller of a request.
#[derive(Debug, Clone)]
struct Viewer {
    who: Authenticated,
    via: Via,
}

impl Viewer {
    fn csrf(&self) -> Option<&str> {
        match &self.via {
            Via::Session { csrf, .. } => Some(csrf),
            Via::Bearer => None,
        }
    }

    /// Whether a form from this caller carries the right CSRF token (a bearer caller needs
    /// none).
    fn form_allowed(&self, given: Option<&str>) -> bool {
        match &self.via {
            Via::Session { csrf, .. } => given.is_some_and(|g| session::same_token(g, csrf)),
            Via::Bearer => true,
        }
    }
}

/// The caller: the session its cookie names, else its bearer token. A browser without either
/// is sent to `/login`; a bad bearer token is refused as `serve` refuses it.
async fn viewer(app: &App, headers: &HeaderMap) -> Result<Viewer, Response> {
    if let Some(cookie) = session::cookie(headers, SESSION_COOKIE) {
        if let Some(s) = app.sessions.get(&cookie) {
            return Ok(Viewer {
                who: s.who,
                via: Via::Session {
                    cookie,
                    csrf: s.csrf,
                },
            });
        }
    }
    if headers.contains_key(header::AUTHORIZATION) {
        return app.auth.authenticate(headers).await.map(|who| Viewer {
            who,
            via: Via::Bearer,
        });
    }
    Err(Redirect::to("/login").into_response())
}

fn html(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}

/// The page context of `viewer`.
fn ctx<'a>(app: &'a App, viewer: Option<&'a Viewer>, broken: Option<String>) -> Ctx<'a> {
    Ctx {
        who: viewer.map(|v| &v.who.principal),
        csrf: viewer.and_then(Viewer::csrf),
        status: app.status(),
        broken,
    }
}

macro_rules! signed_in {
    ($app:expr, $headers:expr) => {
        match viewer(&$app, &$headers).await {
            Ok(v) => v,
            Err(response) => return response,
        }
    };
}

// ----- signing in -----

#[derive(Debug, Deserialize)]
struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    login: String,
}

/// The sign-in form; it sets the sign-in cookie its hidden field repeats.
async fn login_form(State(app): Shared, headers: HeaderMap) -> Response {
    let browser = session::cookie(&headers, LOGIN_COOKIE)
        .filter(|c| c.len() == 43)
        .unwrap_or_else(session::random_token);
    let issuer = app.config.oidc.as_ref().map(|o| o.issuer().to_string());
    let c = ctx(&app, None, None);
    let mut response = html(
        StatusCode::OK,
        pages::login::page(&c, &browser, issuer.as_deref(), None),
    );
    set(&mut response, &login_cookie(&app, &browser));
    response
}

fn login_cookie(app: &App, value: &str) -> String {
    session::set_cookie(
        LOGIN_COOKIE,
        value,
        Duration::from_secs(600),
        app.config.secure_cookies,
        Reach::Lax,
    )
}

fn set(response: &mut Response, cookie: &str) {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// A development token (or an access token) typed into the form.
async fn login(State(app): Shared, headers: HeaderMap, Form(form): Form<LoginForm>) -> Response {
    let browser = session::cookie(&headers, LOGIN_COOKIE);
    let issuer = app.config.oidc.as_ref().map(|o| o.issuer().to_string());
    let refuse = |status: StatusCode, why: &str| {
        let fresh = session::random_token();
        let c = ctx(&app, None, None);
        let mut r = html(
            status,
            pages::login::page(&c, &fresh, issuer.as_deref(), Some(why)),
        );
        set(&mut r, &login_cookie(&app, &fresh));
        r
    };
    if !browser
        .as_deref()
        .is_some_and(|b| session::same_token(&form.login, b))
    {
        return refuse(
            StatusCode::FORBIDDEN,
            "this form was not opened in this browser (or has expired): sign in again",
        );
    }
    let mut bearer = HeaderMap::new();
    let Ok(value) = HeaderValue::from_str(&format!("Bearer {}", form.token.trim())) else {
        return refuse(StatusCode::UNAUTHORIZED, "the token is not valid");
    };
    bearer.insert(header::AUTHORIZATION, value);
    match app.auth.authenticate(&bearer).await {
        Ok(who) => {
            let until = crate::oidc::token_expiry_ms(form.token.trim());
            sign_in(&app, who, until, Onward::Redirect)
        }
        Err(_) => refuse(
            StatusCode::UNAUTHORIZED,
            "the token is not one the console accepts",
        ),
    }
}

/// How a signed-in browser is sent on to the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Onward {
    /// A `303` (the sign-in form posted from the console's own page).
    Redirect,
    /// A page that moves on by itself: the identity provider's redirect is a navigation from
    /// another site, and a `SameSite=Strict` cookie is not sent on the redirects that follow
    /// it; a navigation the console's own page starts carries it.
    Page,
}

/// Open a session for `who` and send the browser to the calls.
fn sign_in(app: &App, who: Authenticated, until_ms: Option<u64>, onward: Onward) -> Response {
    tracing::info!(principal = %who.principal, "console sign-in");
    let principal = who.principal.to_string();
    let value = app.sessions.open(who, until_ms);
    let mut response = match onward {
        Onward::Redirect => Redirect::to("/calls").into_response(),
        Onward::Page => html(StatusCode::OK, pages::login::signed_in(&principal)),
    };
    set(
        &mut response,
        &session::set_cookie(
            SESSION_COOKIE,
            &value,
            app.config.session_ttl,
            app.config.secure_cookies,
            Reach::Strict,
        ),
    );
    set(
        &mut response,
        &session::set_cookie(
            LOGIN_COOKIE,
            "",
            Duration::ZERO,
            app.config.secure_cookies,
            Reach::Lax,
        ),
    );
    response
}

async fn oidc_start(State(app): Shared, headers: HeaderMap) -> Response {
    let Some(oidc) = &app.config.oidc else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(browser) = session::cookie(&headers, LOGIN_COOKIE) else {
        return Redirect::to("/login").into_response();
    };
    match oidc.start(&browser).await {
        Ok(url) => Redirect::to(url.as_str()).into_response(),
        Err(e) => error_page(&app, None, StatusCode::BAD_GATEWAY, &e.to_string()),
    }
}

#[derive(Debug, Deserialize)]
struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

async fn oidc_callback(
    State(app): Shared,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    let Some(oidc) = &app.config.oidc else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let refused = |why: String| error_page(&app, None, StatusCode::FORBIDDEN, &why);
    if let Some(error) = q.error {
        return refused(
            crate::oidc::LoginError::Refused(format!(
                "{error}: {}",
                q.error_description.unwrap_or_default()
            ))
            .to_string(),
        );
    }
    let (Some(code), Some(state), Some(browser)) =
        (q.code, q.state, session::cookie(&headers, LOGIN_COOKIE))
    else {
        return refused(crate::oidc::LoginError::UnknownState.to_string());
    };
    let token = match oidc.finish(&state, &code, &browser).await {
        Ok(t) => t,
        Err(e) => return refused(e.to_string()),
    };
    let mut bearer = HeaderMap::new();
    let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}")) else {
        return refused("the identity provider's token is not a header value".into());
    };
    bearer.insert(header::AUTHORIZATION, value);
    match app.auth.authenticate(&bearer).await {
        Ok(who) => sign_in(
            &app,
            who,
            crate::oidc::token_expiry_ms(&token),
            Onward::Page,
        ),
        Err(_) => refused("the identity provider's token does not verify for this console".into()),
    }
}

#[derive(Debug, Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: Option<String>,
}

async fn logout(State(app): Shared, headers: HeaderMap, Form(form): Form<CsrfForm>) -> Response {
    let v = signed_in!(app, headers);
    if !v.form_allowed(form.csrf.as_deref()) {
        return forged(&app, &v);
    }
    if let Via::Session { cookie, .. } = &v.via {
        app.sessions.close(cookie);
    }
    let mut response = Redirect::to("/login").into_response();
    set(
        &mut response,
        &session::set_cookie(
            SESSION_COOKIE,
            "",
            Duration::ZERO,
            app.config.secure_cookies,
            Reach::Strict,
        ),
    );
    response
}

fn forged(app: &App, v: &Viewer) -> Response {
    error_page(
        app,
        Some(v),
        StatusCode::FORBIDDEN,
        "the form's CSRF token is missing or not this session's: nothing was done",
    )
}

/// The page of a ledger that cannot be read.
fn unreadable(c: &Ctx<'_>, e: &dyn std::fmt::Display) -> Response {
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        pages::message(c, "Ledger unreadable", &e.to_string()),
    )
}

fn error_page(app: &App, v: Option<&Viewer>, status: StatusCode, message: &str) -> Response {
    let c = ctx(app, v, None);
    html(status, pages::message(&c, "Refused", message))
}

// ----- reading -----

#[derive(Debug, Deserialize)]
struct CallsQuery {
    #[serde(flatten)]
    filter: Filter,
    #[serde(default)]
    before: Option<u64>,
}

async fn calls(State(app): Shared, headers: HeaderMap, Query(q): Query<CallsQuery>) -> Response {
    let v = signed_in!(app, headers);
    let (page, choices, broken, total) = {
        let index = app.index();
        (
            index.page(&q.filter, q.before, PAGE_SIZE),
            index.choices(),
            index.broken().map(str::to_string),
            index.calls_len(),
        )
    };
    let c = ctx(&app, Some(&v), broken);
    match page {
        Ok(page) => html(
            StatusCode::OK,
            pages::calls::list(&c, &q.filter, &page, &choices, total),
        ),
        Err(e) => html(
            StatusCode::BAD_REQUEST,
            pages::message(&c, "Bad filter", &e.to_string()),
        ),
    }
}

async fn call(State(app): Shared, headers: HeaderMap, Path(call_id): Path<String>) -> Response {
    let v = signed_in!(app, headers);
    let broken = app.index().broken().map(str::to_string);
    let c = ctx(&app, Some(&v), broken);
    let ledger = app.runtime.ledger();
    let view = match CallView::new(&**ledger).call(&call_id) {
        Ok(Some(view)) if view.intent.is_some() => view,
        Ok(_) => {
            return html(
                StatusCode::NOT_FOUND,
                pages::message(
                    &c,
                    "No such call",
                    &format!("no intent records call {call_id}"),
                ),
            )
        }
        Err(e) => return unreadable(&c, &e),
    };
    let status = app.status();
    let seqs: Vec<u64> = [
        view.intent.as_ref().map(|r| r.seq),
        view.approval.as_ref().map(|r| r.seq),
        view.outcome.as_ref().map(|r| r.seq),
    ]
    .into_iter()
    .flatten()
    .collect();
    let proof = crate::integrity::prove(&status, &call_id, &seqs);
    let cedar = app.runtime.registry().cedar();
    html(
        StatusCode::OK,
        pages::call::page(&c, &view, &proof, cedar, now_ms()),
    )
}

async fn runs(State(app): Shared, headers: HeaderMap) -> Response {
    let v = signed_in!(app, headers);
    let (runs, broken) = {
        let index = app.index();
        (index.runs(), index.broken().map(str::to_string))
    };
    let c = ctx(&app, Some(&v), broken);
    html(StatusCode::OK, pages::runs::list(&c, &runs))
}

async fn run(State(app): Shared, headers: HeaderMap, Path(run_id): Path<String>) -> Response {
    let v = signed_in!(app, headers);
    let broken = app.index().broken().map(str::to_string);
    let c = ctx(&app, Some(&v), broken);
    let entries = match app.runtime.ledger().entries_for_run(&run_id) {
        Ok(e) => e,
        Err(e) => return unreadable(&c, &e),
    };
    if entries.is_empty() {
        return html(
            StatusCode::NOT_FOUND,
            pages::message(&c, "No such run", &format!("no entry records run {run_id}")),
        );
    }
    let path = crate::graph::RunPath::of(&entries);
    let sop = app
        .config
        .sops
        .iter()
        .find(|s| Some(s.sop_id.as_str()) == path.sop_id.as_deref());
    let svg = crate::graph::svg(sop, app.runtime.registry().records(), &path);
    html(
        StatusCode::OK,
        pages::runs::page(&c, &run_id, &path, sop, &svg),
    )
}

async fn approvals(State(app): Shared, headers: HeaderMap) -> Response {
    let v = signed_in!(app, headers);
    let (waiting, broken) = {
        let index = app.index();
        (index.waiting(now_ms()), index.broken().map(str::to_string))
    };
    let ledger = app.runtime.ledger();
    let view = CallView::new(&**ledger);
    let calls: Vec<_> = waiting
        .iter()
        .filter_map(|row| view.call(&row.call_id).ok().flatten())
        .collect();
    let c = ctx(&app, Some(&v), broken);
    html(StatusCode::OK, pages::approvals::page(&c, &calls))
}

async fn approve(
    State(app): Shared,
    headers: HeaderMap,
    Path(call_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    decide(&app, &headers, &call_id, form, Verdict::Approve).await
}

async fn reject(
    State(app): Shared,
    headers: HeaderMap,
    Path(call_id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    decide(&app, &headers, &call_id, form, Verdict::Reject).await
}

/// Approve or reject as the signed-in principal: the runtime decides (Cedar's `approve`
/// action, the requester refused), and records the decision before anything runs.
async fn decide(
    app: &App,
    headers: &HeaderMap,
    call_id: &str,
    form: CsrfForm,
    verdict: Verdict,
) -> Response {
    let v = signed_in!(app, headers);
    if !v.form_allowed(form.csrf.as_deref()) {
        return forged(app, &v);
    }
    let decided = app.runtime.decide(v.who.decider(), call_id, verdict).await;
    let c = ctx(app, Some(&v), None);
    match decided {
        Ok(report) => html(
            StatusCode::OK,
            pages::approvals::decided(&c, call_id, verdict, &report),
        ),
        Err(e) if e.is_refusal() => html(
            StatusCode::FORBIDDEN,
            pages::message(&c, "Refused", &e.to_string()),
        ),
        Err(e) => html(
            StatusCode::OK,
            pages::message(&c, "Decided, and the call failed", &e.to_string()),
        ),
    }
}

async fn policies(State(app): Shared, headers: HeaderMap) -> Response {
    let v = signed_in!(app, headers);
    let (disagreements, broken) = {
        let index = app.index();
        (index.disagreements(), index.broken().map(str::to_string))
    };
    let c = ctx(&app, Some(&v), broken);
    let replay = app.config.what_if.as_ref().map(|w| {
        (
            w.dir.display().to_string(),
            app.config
                .location
                .verified_entries()
                .map(|entries| escepine_runtime::replay::replay(&entries, &w.authorizer))
                .map_err(|e| e.to_string()),
        )
    });
    html(
        StatusCode::OK,
        pages::policies::page(&c, &disagreements, replay.as_ref()),
    )
}

async fn flow(State(app): Shared, headers: HeaderMap, Path(flow): Path<String>) -> Response {
    let v = signed_in!(app, headers);
    let (calls, broken) = {
        let index = app.index();
        let filter = Filter {
            flow: flow.clone(),
            ..Filter::default()
        };
        (
            index.page(&filter, None, PAGE_SIZE).map(|p| p.rows),
            index.broken().map(str::to_string),
        )
    };
    let c = ctx(&app, Some(&v), broken);
    let id = match flow_id(&c, &flow) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    match app.runtime.flow_state(&id) {
        Ok(state) => html(
            StatusCode::OK,
            pages::flows::page(&c, &flow, &state, &calls.unwrap_or_default()),
        ),
        Err(e) => unreadable(&c, &e),
    }
}

#[derive(Debug, Deserialize)]
struct DeclassifyForm {
    #[serde(default)]
    csrf: Option<String>,
    #[serde(default)]
    label: String,
    #[serde(default)]
    reason: String,
}

/// Remove a label from a flow as the signed-in principal: the runtime decides (Cedar's
/// `declassify` action; a principal whose calls brought the label is refused) and records it.
async fn declassify(
    State(app): Shared,
    headers: HeaderMap,
    Path(flow): Path<String>,
    Form(form): Form<DeclassifyForm>,
) -> Response {
    let v = signed_in!(app, headers);
    if !v.form_allowed(form.csrf.as_deref()) {
        return forged(&app, &v);
    }
    let c = ctx(&app, Some(&v), None);
    let id = match flow_id(&c, &flow) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    let decided = app
        .runtime
        .declassify(escepine_runtime::flows::Declassify {
            flow: &id,
            label: &form.label,
            principal: &v.who.principal,
            parents: v.who.parents(),
            reason: &form.reason,
        })
        .await;
    match decided {
        Ok(d) => {
            html(
                StatusCode::OK,
                pages::message(
                    &c,
                    "Declassified",
                    &format!(
                    "`{}` removed from flow {flow} (entry #{}, permitted by {}); it now holds: {}",
                    form.label,
                    d.entry.seq,
                    d.policy_ids.join(", "),
                    if d.state.labels.is_empty() {
                        "no label".to_string()
                    } else {
                        d.state.labels.iter().cloned().collect::<Vec<_>>().join(", ")
                    }
                ),
                ),
            )
        }
        Err(e) if e.refused() => html(
            StatusCode::FORBIDDEN,
            pages::message(&c, "Refused", &e.to_string()),
        ),
        Err(e) => html(
            StatusCode::SERVICE_UNAVAILABLE,
            pages::message(&c, "Not recorded", &e.to_string()),
        ),
    }
}

/// The flow id of a path, or the page refusing it.
fn flow_id(c: &Ctx<'_>, flow: &str) -> Result<escepine_contract::FlowId, Box<Response>> {
    escepine_contract::FlowId::named(flow).map_err(|e| {
        Box::new(html(
            StatusCode::BAD_REQUEST,
            pages::message(c, "Not a flow id", &e.to_string()),
        ))
    })
}
