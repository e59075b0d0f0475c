//! What a typed handler's `?` can return, and whose fault it is.
//!
//! - [`ToolError::Caller`]: the arguments or the request cannot be served as asked (in the
//!   example shop: unknown SKU, quantity too large, cart already checked out). A tool answers it as a tool execution error
//!   (`isError: true`) the model can read and correct; a prompt or resource as `-32602`.
//! - [`ToolError::Server`]: ours or the protocol's: a JSON-RPC error. Store contention and
//!   outages arrive here as retryable errors that say so, never as `-32603`.
//! - [`ToolError::Internal`]: a bug or an unexpected failure: `-32603`, its cause logged, never
//!   shown to the caller.
//! - [`ToolError::Answer`]: not a failure: the round ends with this answer before the handler
//!   completes, an `input_required` ([`crate::author::ToolContext::elicit`] returns it, so `?`
//!   asks) or a created task ([`crate::author::ToolContext::start_task`]).

use std::fmt::Display;

use relevo_state::{StartError, StoreError};

use crate::error::{McpError, store_failure};
use crate::registry::Outcome;

/// Why a typed handler did not complete, and so how the call is answered.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The caller's fault: a tool execution error (`isError: true`) with this text, which the
    /// model can read and correct.
    #[error("{0}")]
    Caller(String),
    /// A protocol error, answered as a JSON-RPC error (a store failure is a retryable one).
    #[error(transparent)]
    Server(#[from] McpError),
    /// A bug or an unexpected failure: logged with its cause, answered `-32603`.
    #[error("internal error: {0}")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Not an error: the handler answers before it completes (an `input_required` round, or a
    /// created task). `?` on [`crate::author::ToolContext::elicit`] returns it.
    #[error("the handler answers before it completes")]
    Answer(Box<Outcome>),
}

impl ToolError {
    /// The caller's fault, in words the model can act on.
    pub fn caller(message: impl Display) -> Self {
        ToolError::Caller(message.to_string())
    }

    /// An unexpected failure: logged with its cause, answered `-32603`.
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ToolError::Internal(cause.into())
    }

    /// The handler's outcome for this error on `tools/call`.
    pub(crate) fn into_tool_outcome(self, tool: &str) -> Result<Outcome, McpError> {
        match self {
            ToolError::Caller(message) => Ok(Outcome::tool_error(message)),
            ToolError::Answer(outcome) => Ok(*outcome),
            other => Err(other.into_protocol_error(tool)),
        }
    }

    /// The handler's outcome on methods without tool execution errors (prompts, resources).
    pub(crate) fn into_outcome(self, target: &str) -> Result<Outcome, McpError> {
        match self {
            ToolError::Caller(message) => Err(McpError::InvalidParams {
                message,
                data: None,
            }),
            ToolError::Answer(outcome) => Ok(*outcome),
            other => Err(other.into_protocol_error(target)),
        }
    }

    pub(crate) fn into_protocol_error(self, target: &str) -> McpError {
        match self {
            ToolError::Server(error) => error,
            ToolError::Internal(cause) => {
                tracing::error!(target, cause = %cause, "handler failed");
                McpError::Internal
            }
            ToolError::Caller(message) => McpError::InvalidParams {
                message,
                data: None,
            },
            ToolError::Answer(_) => McpError::Internal,
        }
    }
}

/// A store failure: contention and outages are retryable, anything else internal.
impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> Self {
        ToolError::Server(store_failure("app")(error))
    }
}

/// Starting a job: a key reused with other arguments is the caller's; a full budget is a
/// retryable limit; the store's failures as above.
impl From<StartError> for ToolError {
    fn from(error: StartError) -> Self {
        match error {
            StartError::KeyConflict { .. } => ToolError::Caller(error.to_string()),
            StartError::LimitReached { what, max } => {
                ToolError::Server(McpError::LimitReached { what, max })
            }
            StartError::Store(error) => error.into(),
            StartError::Input { .. } => ToolError::internal(error),
        }
    }
}

/// `?` on any `Result`: say whose fault its error is.
pub trait Fault<T> {
    /// The error is the caller's (a tool execution error).
    fn caller_fault(self) -> Result<T, ToolError>;
    /// The error is ours (logged, `-32603`).
    fn internal_fault(self) -> Result<T, ToolError>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Fault<T> for Result<T, E> {
    fn caller_fault(self) -> Result<T, ToolError> {
        self.map_err(ToolError::caller)
    }

    fn internal_fault(self) -> Result<T, ToolError> {
        self.map_err(ToolError::internal)
    }
}

/// `?` on an `Option`: a missing value is the caller's fault, in these words.
pub trait Required<T> {
    /// `None` is a tool execution error with `message`.
    fn or_caller(self, message: impl Display) -> Result<T, ToolError>;
}

impl<T> Required<T> for Option<T> {
    fn or_caller(self, message: impl Display) -> Result<T, ToolError> {
        self.ok_or_else(|| ToolError::caller(message))
    }
}
