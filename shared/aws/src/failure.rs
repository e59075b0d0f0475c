//! An SDK failure as a [`StoreError`], keeping what a caller can act on: a timeout (the write may
//! or may not have been applied) is [`StoreError::TimedOut`], everything else that is not a
//! refused condition (throttling, a dispatch failure, a missing table) is
//! [`StoreError::Unavailable`] with the service's code and message.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use relevo_state::StoreError;

pub(crate) fn sdk_failure<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    error: SdkError<E, R>,
) -> StoreError {
    match &error {
        SdkError::TimeoutError(_) => StoreError::TimedOut("no answer within the operation timeout".into()),
        SdkError::DispatchFailure(dispatch) if dispatch.is_timeout() => {
            StoreError::TimedOut(format!("dispatch timed out: {:?}", dispatch.as_connector_error()))
        }
        SdkError::DispatchFailure(dispatch) => {
            StoreError::Unavailable(format!("dispatch failure: {:?}", dispatch.as_connector_error()))
        }
        SdkError::ServiceError(service) => {
            let err = service.err();
            StoreError::Unavailable(format!(
                "{}: {}",
                err.code().unwrap_or("service error"),
                err.message().unwrap_or_default()
            ))
        }
        _ => StoreError::Unavailable(aws_sdk_dynamodb::error::DisplayErrorContext(&error).to_string()),
    }
}
