//! Request-scoped notifications (`notifications/progress`, `notifications/message`) a handler
//! may send while it runs, and whether the client cancelled the request. They reach the client
//! only on that request's SSE stream, and only when the client asked: progress needs a
//! `progressToken`, logs need a `logLevel`.
//!
//! Invariants:
//! - Progress only grows on the wire (Progress: "The `progress` value MUST increase with each
//!   notification, even if the total is unknown"). A value that is not finite, or not greater
//!   than the last one sent for this request, is dropped — the whole notification, logged at
//!   debug, never a panic: a handler's report is advisory and must not fail its call. The check
//!   and the send happen under one lock shared by every clone of the notifier, so two tasks of
//!   one handler cannot put their values on the wire out of order.
//! - `total`, when sent, is finite and at least the `progress` it comes with; a total that is
//!   not (unknown, or outgrown by the work) is left out of that notification, which the spec
//!   allows ("Omit the total value if unknown"), and the progress itself still goes out.
//! - [`Notifier::is_cancelled`] turns true once the request is cancelled: its response stream was
//!   closed (the cancellation signal on Streamable HTTP), or, for a 2025-11-25 session, the
//!   client sent `notifications/cancelled` for it ([`crate::legacy`]). The server drops the
//!   handler's future at that point ([`crate::server`]'s `call`); the flag is for work the
//!   handler handed to other tasks.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::wire::log_level_rank;

#[derive(Debug, Clone, Default)]
/// Sends the notifications of one request to its SSE stream, dropping those the client did
/// not ask for, and publishes resource changes to this instance's listen streams.
pub struct Notifier {
    sink: Option<UnboundedSender<Value>>,
    progress_token: Option<Value>,
    log_threshold: Option<usize>,
    events: Option<(broadcast::Sender<ResourceEvent>, String, String)>,
    /// The last progress value sent for this request, shared by the notifier's clones.
    last_progress: Arc<Mutex<Option<f64>>>,
    /// Cancelled when the client cancels the request.
    cancel: CancellationToken,
}

/// A resource of one principal changed. Delivered to that principal's `subscriptions/listen`
/// streams on this instance (the listen stream lives where the client is connected; other
/// instances' listeners learn of changes when they read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceEvent {
    /// The tenant of the principal whose resource changed.
    pub tenant: String,
    /// The subject of the principal whose resource changed.
    pub subject: String,
    /// The URI of the changed resource.
    pub uri: String,
}

impl Notifier {
    /// A notifier that drops everything: the response is plain JSON.
    pub fn silent() -> Self {
        Notifier::default()
    }

    pub(crate) fn streaming(
        sink: UnboundedSender<Value>,
        progress_token: Option<Value>,
        log_level: Option<&str>,
    ) -> Self {
        Notifier {
            sink: Some(sink),
            progress_token,
            log_threshold: log_level.and_then(log_level_rank),
            events: None,
            last_progress: Arc::default(),
            cancel: CancellationToken::new(),
        }
    }

    /// Sends `notifications/progress` if the client gave a progress token.
    ///
    /// `progress` must grow: a value that is not finite, or not greater than the last one sent
    /// for this request, is dropped (logged at debug). `total` is sent only when it is finite and
    /// at least `progress`; otherwise this notification goes out without it.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(sink), Some(token)) = (&self.sink, &self.progress_token) else {
            return;
        };
        if !progress.is_finite() {
            tracing::debug!(
                progress,
                "progress notification dropped: not a finite number"
            );
            return;
        }
        // Held across the send, so that clones sending at once reach the wire in order.
        let mut last = self
            .last_progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = *last
            && progress <= last
        {
            tracing::debug!(
                progress,
                last,
                "progress notification dropped: progress must increase"
            );
            return;
        }
        let mut params = json!({ "progressToken": token, "progress": progress });
        match total {
            Some(total) if total.is_finite() && total >= progress => params["total"] = json!(total),
            Some(total) => {
                tracing::debug!(
                    progress,
                    total,
                    "progress total left out: not finite or below progress"
                );
            }
            None => {}
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        let sent = sink.send(
            json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params }),
        );
        if sent.is_ok() {
            *last = Some(progress);
        }
    }

    /// Sends `notifications/message` if the client asked for logs at this level or below.
    pub fn log(&self, level: &str, logger: Option<&str>, data: Value) {
        let (Some(sink), Some(threshold)) = (&self.sink, self.log_threshold) else {
            return;
        };
        if log_level_rank(level).is_none_or(|rank| rank < threshold) {
            return;
        }
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        let _ = sink
            .send(json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": params }));
    }

    /// Attaches the instance's resource-event channel, for the caller `tenant`/`subject`.
    pub(crate) fn with_events(
        mut self,
        sender: broadcast::Sender<ResourceEvent>,
        tenant: &str,
        subject: &str,
    ) -> Self {
        self.events = Some((sender, tenant.into(), subject.into()));
        self
    }

    /// Reports that `uri` (of the caller) changed, for `notifications/resources/updated`.
    pub fn resource_updated(&self, uri: &str) {
        if let Some((sender, tenant, subject)) = &self.events {
            let _ = sender.send(ResourceEvent {
                tenant: tenant.clone(),
                subject: subject.clone(),
                uri: uri.into(),
            });
        }
    }

    /// Ties the notifier to the request's cancellation.
    pub(crate) fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// True once the client has cancelled the request: it closed the response stream (the spec's
    /// cancellation signal on HTTP) or, in a 2025-11-25 session, sent `notifications/cancelled`.
    /// The handler's own future is dropped then; this is for work it handed to other tasks.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled() || self.sink.as_ref().is_some_and(UnboundedSender::is_closed)
    }

    /// Resolves when the client cancels the request (see [`Notifier::is_cancelled`]); never, for
    /// a request that cannot be cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_below_the_requested_level_are_dropped() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let notifier = Notifier::streaming(tx, None, Some("warning"));
        notifier.log("info", None, json!("quiet"));
        notifier.log("error", Some("app"), json!("loud"));
        notifier.progress(1.0, None, None);
        let sent = rx.try_recv().unwrap();
        assert_eq!(sent["params"]["data"], "loud");
        assert!(
            rx.try_recv().is_err(),
            "no progress without a token, no info below warning"
        );
    }

    fn progress_values(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Value>) -> Vec<Value> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|note| note["params"].clone())
            .collect()
    }

    #[test]
    fn progress_that_does_not_grow_or_is_not_finite_never_reaches_the_wire() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let notifier = Notifier::streaming(tx, Some(json!("t")), None);
        let clone = notifier.clone();
        notifier.progress(1.0, None, None);
        clone.progress(1.0, None, None);
        notifier.progress(0.5, None, None);
        notifier.progress(f64::NAN, None, None);
        notifier.progress(f64::INFINITY, None, None);
        clone.progress(2.5, None, None);
        let sent: Vec<f64> = progress_values(&mut rx)
            .iter()
            .filter_map(|p| p["progress"].as_f64())
            .collect();
        assert_eq!(sent, [1.0, 2.5]);
    }

    #[test]
    fn a_total_below_progress_or_not_finite_is_left_out() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let notifier = Notifier::streaming(tx, Some(json!(7)), None);
        notifier.progress(1.0, Some(4.0), None);
        notifier.progress(5.0, Some(4.0), Some("more than planned"));
        notifier.progress(6.0, Some(f64::NAN), None);
        let sent = progress_values(&mut rx);
        assert_eq!(sent[0]["total"], 4.0);
        assert!(sent[1].get("total").is_none() && sent[1]["message"] == "more than planned");
        assert!(sent[2].get("total").is_none());
    }

    #[test]
    fn a_cancelled_request_reads_as_cancelled() {
        let cancel = CancellationToken::new();
        let notifier = Notifier::silent().with_cancel(cancel.clone());
        assert!(!notifier.is_cancelled());
        cancel.cancel();
        assert!(notifier.is_cancelled());
    }

    #[test]
    fn silent_notifier_sends_nothing_and_is_not_cancelled() {
        let notifier = Notifier::silent();
        notifier.progress(1.0, Some(2.0), None);
        assert!(!notifier.is_cancelled());
    }
}
