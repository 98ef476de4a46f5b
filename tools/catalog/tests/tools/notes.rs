//! `note_publish` and `note_retract` against a loopback note service (the API of
//! `escepine_catalog::notes`), idempotency included.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::server::{Reply, Server};
use crate::{run, run_ok, KEY};

/// A note service: publishing is idempotent per key, retracting is idempotent per note.
fn service(bearer: Option<&'static str>) -> Server {
    #[derive(Default)]
    struct State {
        by_key: HashMap<String, (Value, Value)>,
        retracted: HashMap<String, bool>,
    }
    let state = Arc::new(Mutex::new(State::default()));
    Server::start(move |req| {
        if let Some(b) = bearer {
            if req.header("authorization") != Some(&format!("Bearer {b}")) {
                return Reply::json(401, &json!({"error": "who are you?"}));
            }
        }
        let Some(key) = req.header("idempotency-key").map(str::to_string) else {
            return Reply::json(400, &json!({"error": "Idempotency-Key required"}));
        };
        let mut st = state.lock().unwrap();
        let segs: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
        match (req.method.as_str(), segs.as_slice()) {
            ("POST", ["notes"]) => {
                let body = req.json();
                if body["title"] == "overloaded" {
                    return Reply::json(503, &json!({"error": "try later"}));
                }
                if let Some((first_body, answer)) = st.by_key.get(&key) {
                    return if *first_body == body {
                        Reply::json(200, answer)
                    } else {
                        Reply::json(409, &json!({"error": "key reused with another body"}))
                    };
                }
                let id = format!("note-{}", st.by_key.len() + 1);
                let answer = json!({"note_id": id, "revision": 1});
                st.by_key.insert(key, (body, answer.clone()));
                st.retracted.insert(id, false);
                Reply::json(201, &answer)
            }
            ("POST", ["notes", id, "retract"]) => {
                let id = crate::server::form_decode(id);
                match st.retracted.get_mut(&id) {
                    Some(r) => {
                        *r = true;
                        Reply::json(200, &json!({"note_id": id, "retracted": true}))
                    }
                    None if id == "stubborn" => {
                        Reply::json(200, &json!({"note_id": id, "retracted": false}))
                    }
                    None => Reply::json(404, &json!({"error": "no such note"})),
                }
            }
            _ => Reply::status(404),
        }
    })
}

#[test]
fn publish_sends_the_idempotency_key_and_a_retry_publishes_once() {
    let s = service(None);
    let base = s.url();
    let env = [("NOTES_BASE_URL", base.as_str())];
    let note = json!({"title": "Findings", "body": "Egress is governed."});
    let out = run_ok("note_publish", &note, &env);
    assert_eq!(out, json!({"note_id": "note-1", "revision": 1}));
    // A retry of the same call (same key) gets the same note.
    assert_eq!(run_ok("note_publish", &note, &env), out);
    let reqs = s.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/notes"));
        assert_eq!(r.header("idempotency-key"), Some(KEY));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.json(), note);
    }
    // Another call (another key) publishes another note.
    let out = run_ok(
        "note_publish",
        &note,
        &[
            ("NOTES_BASE_URL", &base),
            ("ESCEPINE_IDEMPOTENCY_KEY", "idem-key-0002"),
        ],
    );
    assert_eq!(out["note_id"], "note-2");
    // The same key with another body is refused.
    let r = run("note_publish", &json!({"title": "Other", "body": ""}), &env);
    assert!(r
        .failed(1)
        .contains("HTTP 409: key reused with another body"));
    let r = run(
        "note_publish",
        &json!({"title": "overloaded", "body": ""}),
        &env,
    );
    r.failed(75);
}

#[test]
fn retract_is_idempotent_and_encodes_the_id() {
    let s = service(None);
    let base = s.url();
    let env = [("NOTES_BASE_URL", base.as_str())];
    let id = run_ok("note_publish", &json!({"title": "t", "body": "b"}), &env)["note_id"].clone();
    let out = run_ok("note_retract", &json!({ "note_id": id }), &env);
    assert_eq!(out, json!({"note_id": id, "retracted": true}));
    assert_eq!(run_ok("note_retract", &json!({ "note_id": id }), &env), out);
    let last = s.requests().pop().unwrap();
    assert_eq!(last.path, "/notes/note-1/retract");
    assert_eq!(last.header("idempotency-key"), Some(KEY));

    let r = run("note_retract", &json!({"note_id": "a/b?c"}), &env);
    assert!(r.failed(1).contains("HTTP 404: no such note"));
    assert_eq!(s.requests().pop().unwrap().path, "/notes/a%2Fb%3Fc/retract");
    let r = run("note_retract", &json!({"note_id": "stubborn"}), &env);
    assert!(r.failed(1).contains("did not confirm"));
}

#[test]
fn configuration_and_keys() {
    let r = run("note_publish", &json!({"title": "t", "body": "b"}), &[]);
    assert!(r.failed(78).contains("NOTES_BASE_URL is not set"));
    let s = service(Some("notes-secret-1"));
    let base = s.url();
    let out = run_ok(
        "note_publish",
        &json!({"title": "t", "body": "b"}),
        &[
            ("NOTES_BASE_URL", &base),
            ("NOTES_API_KEY", "notes-secret-1"),
        ],
    );
    assert_eq!(out["revision"], 1);
    let r = run(
        "note_publish",
        &json!({"title": "t", "body": "b"}),
        &[("NOTES_BASE_URL", &base), ("ESCEPINE_IDEMPOTENCY_KEY", "")],
    );
    assert!(r.failed(78).contains("ESCEPINE_IDEMPOTENCY_KEY"));
}
