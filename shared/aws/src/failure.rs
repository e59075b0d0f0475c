//! An SDK failure as a [`StoreError`], keeping what a caller can act on: a timeout (the write may
//! or may not have been applied) is [`StoreError::TimedOut`], everything else that is not a
//! refused condition (throttling, a dispatch failure, a missing table) is
//! [`StoreError::Unavailable`]. Either keeps the whole `SdkError` as its source; its text tells
//! the chain (the service's code and message, or the connector's error).

use aws_sdk_dynamodb::error::SdkError;
use relevo_state::StoreError;

pub(crate) fn sdk_failure<E, R>(error: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match &error {
        SdkError::TimeoutError(_) => {
            StoreError::timed_out("no answer within the operation timeout", error)
        }
        SdkError::DispatchFailure(dispatch) if dispatch.is_timeout() => {
            StoreError::timed_out("dispatch timed out", error)
        }
        // The SDK's own text names the failure ("dispatch failure", "service error") before its cause.
        _ => StoreError::unavailable("", error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::config::http::HttpResponse;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_sdk_dynamodb::types::error::ResourceNotFoundException;

    #[test]
    fn a_service_error_is_kept_whole_and_tells_its_code_and_message() {
        let missing = ResourceNotFoundException::builder()
            .message("Requested resource not found")
            .build();
        let response = HttpResponse::new(400u16.try_into().expect("a status code"), "".into());
        let error = sdk_failure(SdkError::service_error(
            GetItemError::ResourceNotFoundException(missing),
            response,
        ));
        assert_eq!(
            error.to_string(),
            "the store is unavailable: service error: ResourceNotFoundException: Requested resource not found"
        );
        let chain =
            std::iter::successors(Some(&error as &(dyn std::error::Error + 'static)), |e| {
                (*e).source()
            });
        let service = chain
            .filter_map(|e| e.downcast_ref::<SdkError<GetItemError, HttpResponse>>())
            .next();
        assert!(
            service
                .and_then(SdkError::as_service_error)
                .is_some_and(GetItemError::is_resource_not_found_exception),
            "{error:?}"
        );
    }
}
