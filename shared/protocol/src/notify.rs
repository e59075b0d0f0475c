//! Request-scoped notifications (`notifications/progress`, `notifications/message`) a handler
//! may send while it runs. They reach the client only on that request's SSE stream, and only
//! when the client asked: progress needs a `progressToken`, logs need a `logLevel`.

use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::sync::mpsc::UnboundedSender;

use crate::wire::log_level_rank;

#[derive(Debug, Clone, Default)]
/// Sends the notifications of one request to its SSE stream, dropping those the client did
/// not ask for, and publishes resource changes to this instance's listen streams.
pub struct Notifier {
    sink: Option<UnboundedSender<Value>>,
    progress_token: Option<Value>,
    log_threshold: Option<usize>,
    events: Option<(broadcast::Sender<ResourceEvent>, String, String)>,
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
        }
    }

    /// Sends `notifications/progress` if the client gave a progress token. `progress` must grow.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(sink), Some(token)) = (&self.sink, &self.progress_token) else {
            return;
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        let _ = sink.send(
            json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params }),
        );
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

    /// True once the client has closed the stream: the spec's cancellation signal on HTTP.
    pub fn is_cancelled(&self) -> bool {
        self.sink.as_ref().is_some_and(UnboundedSender::is_closed)
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

    #[test]
    fn silent_notifier_sends_nothing_and_is_not_cancelled() {
        let notifier = Notifier::silent();
        notifier.progress(1.0, Some(2.0), None);
        assert!(!notifier.is_cancelled());
    }
}
