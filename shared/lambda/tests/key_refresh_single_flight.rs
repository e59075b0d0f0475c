//! Several invocations in flight in one environment (Lambda Managed Instances) that find the
//! keys' refresh due at once read the secret once, not once each: the clock and the read are
//! injected (`KeyRefresh::if_due_at`), so no emulator is needed.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use relevo_lambda::keys::KeyRefresh;
use relevo_state::seal::KeyRing;

fn offline_client() -> aws_sdk_secretsmanager::Client {
    let config = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(aws_sdk_secretsmanager::config::BehaviorVersion::latest())
        .region(aws_sdk_secretsmanager::config::Region::new("us-east-1"))
        .build();
    aws_sdk_secretsmanager::Client::from_conf(config)
}

/// Eight callers at `now`, all released together, each reading through a slow (50 ms) secret
/// read that counts itself; returns how many reads happened.
async fn eight_callers_at(refresh: &Arc<KeyRefresh>, now: Instant, reads: &Arc<AtomicUsize>) {
    let start = Arc::new(tokio::sync::Barrier::new(8));
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let (refresh, reads, start) = (refresh.clone(), reads.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                refresh
                    .if_due_at(now, || async move {
                        reads.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok::<_, std::convert::Infallible>(KeyRing::ephemeral())
                    })
                    .await
            })
        })
        .collect();
    for caller in callers {
        caller.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_invocations_finding_the_refresh_due_read_the_secret_once_per_interval() {
    let every = Duration::from_secs(300);
    let refresh = Arc::new(KeyRefresh::new(
        offline_client(),
        "relevo-keys",
        KeyRing::ephemeral(),
        every,
    ));
    let reads = Arc::new(AtomicUsize::new(0));
    let due = Instant::now() + every + Duration::from_secs(1);

    eight_callers_at(&refresh, due, &reads).await;
    assert_eq!(
        reads.load(Ordering::SeqCst),
        1,
        "one read for eight callers"
    );

    // Within the interval of that read: nobody reads.
    eight_callers_at(&refresh, due + every / 2, &reads).await;
    assert_eq!(reads.load(Ordering::SeqCst), 1);

    // The next interval: one read again.
    eight_callers_at(&refresh, due + every, &reads).await;
    assert_eq!(reads.load(Ordering::SeqCst), 2);
}
