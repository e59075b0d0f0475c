//! The JWKS refetch under a hostile or failing issuer, against a JWKS served over real HTTP on
//! 127.0.0.1 that can serve, fail (HTTP 500) or hang, and counts the fetches it receives: tokens
//! with invented `kid`s cost the issuer at most one fetch per interval, failures included; a token
//! with a known `kid` is answered at once while a fetch hangs; known keys keep verifying while the
//! issuer is down. Time between refetches is the injected clock's.
//!
//! And the remembered tokens against the key set (a source the test swaps): a refetch that drops
//! (or changes) a key the process held forgets every token remembered as verified, so a token of
//! the removed key is refused at that refetch, not up to `REMEMBER_VERIFIED_SECS` later; a
//! refetch that only adds a key forgets nothing.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue};
use jsonwebtoken::jwk::JwkSet;
use relevo_auth::jwks::{COLD_RETRY_INTERVAL, KeysFuture, MIN_REFRESH_INTERVAL};
use relevo_auth::{
    AuthError, AuthSettings, BearerAuthenticator, DevIssuer, HttpKeySource, KeySource,
};
use relevo_protocol::ManualClock;
use serde_json::json;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://mcp.test/mcp";
const NOW: u64 = 1_800_000_000;

const SERVE: u8 = 0;
const FAIL: u8 = 1;
const HANG: u8 = 2;

struct Issuer {
    key: DevIssuer,
    mode: Arc<AtomicU8>,
    fetches: Arc<AtomicUsize>,
    url: String,
}

impl Issuer {
    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }
}

/// A JWKS endpoint on a loopback port, in `mode`; it stops with the test's runtime.
async fn issuer(mode: u8) -> Issuer {
    let key = DevIssuer::generate(ISSUER, AUDIENCE);
    let (mode, fetches) = (Arc::new(AtomicU8::new(mode)), Arc::new(AtomicUsize::new(0)));
    let (jwks, current, count) = (
        serde_json::to_value(key.jwks()).unwrap(),
        mode.clone(),
        fetches.clone(),
    );
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let (jwks, current, count) = (jwks.clone(), current.clone(), count.clone());
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                match current.load(Ordering::SeqCst) {
                    SERVE => Ok(axum::Json(jwks)),
                    FAIL => Err(http::StatusCode::INTERNAL_SERVER_ERROR),
                    _ => {
                        // Longer than the fetch timeout: the client gives up first.
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        Err(http::StatusCode::GATEWAY_TIMEOUT)
                    }
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer {
        key,
        mode,
        fetches,
        url,
    }
}

fn verifier(issuer: &Issuer, clock: &ManualClock) -> BearerAuthenticator {
    verifier_of(
        Arc::new(HttpKeySource::new(&issuer.url)),
        &issuer.url,
        clock,
    )
}

/// A verifier of [`ISSUER`]'s tokens for [`AUDIENCE`] whose keys come from `source`.
fn verifier_of(
    source: Arc<dyn KeySource>,
    jwks_url: &str,
    clock: &ManualClock,
) -> BearerAuthenticator {
    let vars = [
        ("RELEVO_AUTH_ISSUER", ISSUER.to_string()),
        ("RELEVO_AUTH_AUDIENCE", AUDIENCE.to_string()),
        ("RELEVO_AUTH_JWKS_URL", jwks_url.to_string()),
        ("RELEVO_AUTH_ALGORITHMS", "ES256".to_string()),
    ];
    let settings = AuthSettings::load(
        |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        },
        "",
    )
    .unwrap();
    BearerAuthenticator::new(settings, source).with_clock(Arc::new(clock.clone()))
}

/// A token signed by `key` for subject `sub` (each subject a distinct token, never remembered).
fn token(key: &DevIssuer, sub: &str) -> HeaderMap {
    let claims = json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": sub, "tenant": "acme", "iat": NOW, "exp": NOW + 3600 });
    let mut headers = HeaderMap::new();
    let value = format!("Bearer {}", key.sign(&claims).unwrap());
    headers.insert("authorization", HeaderValue::from_str(&value).unwrap());
    headers
}

/// A token signed by a key the issuer never had, under a `kid` of its own.
fn forged(n: usize) -> HeaderMap {
    token(
        &DevIssuer::generate(ISSUER, AUDIENCE),
        &format!("mallory-{n}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_kids_while_the_issuer_is_down_cost_one_fetch_per_interval() {
    let issuer = issuer(FAIL).await;
    let clock = ManualClock::at(NOW);
    let verifier = verifier(&issuer, &clock);
    for n in 0..20 {
        assert_eq!(
            verifier.verify(&forged(n)).await,
            Err(AuthError::KeysUnavailable)
        );
    }
    assert_eq!(
        issuer.fetches(),
        1,
        "20 forged tokens while the issuer fails: one fetch"
    );
    clock.advance(COLD_RETRY_INTERVAL.as_secs() - 1);
    assert_eq!(
        verifier.verify(&forged(20)).await,
        Err(AuthError::KeysUnavailable)
    );
    assert_eq!(
        issuer.fetches(),
        1,
        "a failure is not retried before the interval has passed"
    );
    clock.advance(1);
    assert_eq!(
        verifier.verify(&forged(21)).await,
        Err(AuthError::KeysUnavailable)
    );
    assert_eq!(issuer.fetches(), 2, "retried once the interval has passed");

    // The issuer is back: the next fetch (an interval later) is the one that succeeds.
    issuer.set(SERVE);
    clock.advance(COLD_RETRY_INTERVAL.as_secs());
    assert!(verifier.verify(&token(&issuer.key, "alice")).await.is_ok());
    assert_eq!(issuer.fetches(), 3);

    // Keys held: forged kids, whether the refetch they cause succeeds or fails.
    clock.advance(MIN_REFRESH_INTERVAL.as_secs());
    for n in 100..120 {
        assert_eq!(
            verifier.verify(&forged(n)).await,
            Err(AuthError::UnknownKey)
        );
    }
    assert_eq!(
        issuer.fetches(),
        4,
        "20 forged kids with keys held: one refetch"
    );
    issuer.set(FAIL);
    clock.advance(MIN_REFRESH_INTERVAL.as_secs());
    assert_eq!(
        verifier.verify(&forged(200)).await,
        Err(AuthError::KeysUnavailable),
        "the refetch it caused failed"
    );
    for n in 201..220 {
        assert_eq!(
            verifier.verify(&forged(n)).await,
            Err(AuthError::UnknownKey)
        );
    }
    assert_eq!(
        issuer.fetches(),
        5,
        "a failed refetch also waits out the interval"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_forged_kids_share_one_fetch() {
    let issuer = issuer(SERVE).await;
    let clock = ManualClock::at(NOW);
    let verifier = verifier(&issuer, &clock);
    assert!(verifier.verify(&token(&issuer.key, "alice")).await.is_ok());
    clock.advance(MIN_REFRESH_INTERVAL.as_secs());
    let forged: Vec<HeaderMap> = (0..16).map(forged).collect();
    let attempts = forged.iter().map(|headers| verifier.verify(headers));
    for outcome in futures_join_all(attempts).await {
        assert_eq!(outcome, Err(AuthError::UnknownKey));
    }
    assert_eq!(
        issuer.fetches(),
        2,
        "the first fetch, then one refetch for 16 concurrent forged kids"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_kid_is_answered_at_once_while_a_forged_kid_fetch_hangs() {
    let issuer = issuer(SERVE).await;
    let clock = ManualClock::at(NOW);
    let verifier = verifier(&issuer, &clock);
    assert!(verifier.verify(&token(&issuer.key, "alice")).await.is_ok());
    issuer.set(HANG);
    clock.advance(MIN_REFRESH_INTERVAL.as_secs());
    let hanging = {
        let verifier = verifier.clone();
        tokio::spawn(async move { verifier.verify(&forged(0)).await })
    };
    let waiting = Instant::now();
    while issuer.fetches() < 2 {
        assert!(
            waiting.elapsed() < Duration::from_secs(10),
            "the forged kid caused no refetch"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let started = Instant::now();
    let answered = tokio::time::timeout(
        Duration::from_secs(1),
        verifier.verify(&token(&issuer.key, "bob")),
    )
    .await;
    assert!(
        matches!(answered, Ok(Ok(ref principal)) if principal.subject == "bob"),
        "a known kid waited for the hanging fetch: {answered:?} after {:?}",
        started.elapsed()
    );
    assert!(
        !hanging.is_finished(),
        "the forged kid's fetch is still hanging"
    );
    assert_eq!(
        hanging.await.unwrap(),
        Err(AuthError::KeysUnavailable),
        "then times out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_keys_verify_while_the_issuer_is_down() {
    let issuer = issuer(SERVE).await;
    let clock = ManualClock::at(NOW);
    let verifier = verifier(&issuer, &clock);
    assert!(verifier.verify(&token(&issuer.key, "alice")).await.is_ok());
    issuer.set(FAIL);
    for round in 0..3 {
        clock.advance(MIN_REFRESH_INTERVAL.as_secs());
        let _ = verifier.verify(&forged(round)).await;
        let principal = verifier
            .verify(&token(&issuer.key, &format!("user-{round}")))
            .await
            .unwrap();
        assert_eq!(principal.subject, format!("user-{round}"));
    }
    assert_eq!(
        issuer.fetches(),
        4,
        "one failed refetch per interval, the keys held kept"
    );
}

/// Runs the futures concurrently on this task and returns their outcomes in order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    let mut outcomes: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, future) in outcomes.iter_mut().zip(set.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(outcome) => *slot = Some(outcome),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outcomes.into_iter().map(|o| o.unwrap()).collect()
}

/// The issuer's JWKS as the test sets it (the keys of the given issuers), counting fetches.
#[derive(Default)]
struct Swappable {
    keys: Mutex<Vec<JwkSet>>,
    fetches: AtomicUsize,
}

impl Swappable {
    fn serve(&self, issuers: &[&DevIssuer]) {
        *self.keys.lock().unwrap() = issuers.iter().map(|issuer| issuer.jwks()).collect();
    }
}

impl KeySource for Swappable {
    fn fetch(&self) -> KeysFuture<'_> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let keys = self.keys.lock().unwrap();
        let keys = JwkSet {
            keys: keys.iter().flat_map(|set| set.keys.clone()).collect(),
        };
        Box::pin(async move { Ok(keys) })
    }
}

/// Two issuers' keys, a source serving the first's, and a verifier that has verified (and
/// remembers) `alice`, a token of the first.
struct Remembering {
    old: DevIssuer,
    new: DevIssuer,
    source: Arc<Swappable>,
    clock: ManualClock,
    verifier: BearerAuthenticator,
    alice: HeaderMap,
}

async fn remembering() -> Remembering {
    let (old, new) = (
        DevIssuer::generate(ISSUER, AUDIENCE),
        DevIssuer::generate(ISSUER, AUDIENCE),
    );
    let source = Arc::new(Swappable::default());
    source.serve(&[&old]);
    let clock = ManualClock::at(NOW);
    let verifier = verifier_of(source.clone(), "https://issuer.test/jwks.json", &clock);
    let alice = token(&old, "alice");
    assert!(verifier.verify(&alice).await.is_ok());
    assert!(verifier.verify(&alice).await.is_ok(), "recalled");
    Remembering {
        old,
        new,
        source,
        clock,
        verifier,
        alice,
    }
}

#[tokio::test]
async fn a_remembered_token_is_refused_after_a_refetch_that_drops_its_key() {
    let r = remembering().await;
    // The issuer drops the old key; a token of the new one brings the refetch.
    r.source.serve(&[&r.new]);
    r.clock.advance(MIN_REFRESH_INTERVAL.as_secs());
    assert!(r.verifier.verify(&token(&r.new, "bob")).await.is_ok());
    assert_eq!(r.source.fetches.load(Ordering::SeqCst), 2);
    assert_eq!(
        r.verifier.verify(&r.alice).await.unwrap_err(),
        AuthError::UnknownKey,
        "remembered under the dropped key: verified again, and refused"
    );
}

#[tokio::test]
async fn a_remembered_token_is_refused_after_a_refetch_that_changes_its_key() {
    let r = remembering().await;
    // The old kid now names the new issuer's key material; a third key brings the refetch.
    let mut changed = r.new.jwks();
    changed.keys[0].common.key_id = r.old.jwks().keys[0].common.key_id.clone();
    let third = DevIssuer::generate(ISSUER, AUDIENCE);
    *r.source.keys.lock().unwrap() = vec![changed, third.jwks()];
    r.clock.advance(MIN_REFRESH_INTERVAL.as_secs());
    assert!(r.verifier.verify(&token(&third, "bob")).await.is_ok());
    assert_eq!(
        r.verifier.verify(&r.alice).await.unwrap_err(),
        AuthError::BadSignature,
        "verified again against the key now under its kid"
    );
}

#[tokio::test]
async fn a_refetch_that_only_adds_a_key_keeps_the_remembered_tokens() {
    let r = remembering().await;
    r.source.serve(&[&r.old, &r.new]);
    r.clock.advance(MIN_REFRESH_INTERVAL.as_secs());
    assert!(r.verifier.verify(&token(&r.new, "bob")).await.is_ok());
    // Still admitted, and from memory: the old key's removal now is not seen until a refetch,
    // which is not due.
    r.source.serve(&[&r.new]);
    assert!(r.verifier.verify(&r.alice).await.is_ok());
    assert_eq!(r.source.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefetch_at_init_is_the_first_tokens_fetch() {
    use relevo_protocol::Authenticator;
    let issuer = issuer(SERVE).await;
    let clock = ManualClock::at(NOW);
    let verifier = verifier(&issuer, &clock);
    // A token arriving while the prefetch is in flight waits for it and shares it.
    let alice = token(&issuer.key, "alice");
    let ((), verified) = tokio::join!(verifier.prefetch(), verifier.verify(&alice));
    assert!(verified.is_ok());
    verifier.prefetch().await;
    assert!(verifier.verify(&token(&issuer.key, "bob")).await.is_ok());
    assert_eq!(
        issuer.fetches(),
        1,
        "one fetch for the prefetches and tokens"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_prefetch_spends_no_callers_attempt() {
    use relevo_protocol::Authenticator;
    let issuer = issuer(FAIL).await;
    let clock = ManualClock::at(NOW);
    let verifier = verifier(&issuer, &clock);
    verifier.prefetch().await;
    assert_eq!(issuer.fetches(), 1);
    // The first token fetches at once: the failed prefetch held nothing back.
    assert_eq!(
        verifier.verify(&token(&issuer.key, "alice")).await,
        Err(AuthError::KeysUnavailable)
    );
    assert_eq!(issuer.fetches(), 2);
    // That failure was a caller's: the cold retry interval bounds the next one.
    issuer.set(SERVE);
    assert_eq!(
        verifier.verify(&token(&issuer.key, "alice")).await,
        Err(AuthError::KeysUnavailable),
        "no fetch before the cold retry interval"
    );
    assert_eq!(issuer.fetches(), 2);
    clock.advance(COLD_RETRY_INTERVAL.as_secs());
    assert!(verifier.verify(&token(&issuer.key, "alice")).await.is_ok());
    assert_eq!(issuer.fetches(), 3);
}
