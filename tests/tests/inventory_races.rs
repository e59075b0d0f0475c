//! The race harness over the operation ledger: agents and people on three service instances
//! (each its own `Inventory` and warehouse client over one raced store) interleaving different
//! requests for the same items, on the SQLite store and on DynamoDB (moto, started by `make
//! test`). The invariants are checked over the recorded store writes and every answer; a failure
//! names the seed (`RELEVO_RACE_SEED=… cargo test` replays it).
//!
//! The history counts what matters outside the ledger: a stock commit is an applied write of a
//! `stock` record, a downstream effect an applied first create of a `warehouse-api` record (the
//! simulated warehouse applies a change when it first sees its key), a decision an applied write
//! of an operation leaving `proposed`.
//!
//! The approval page calls the same `Inventory::decide` as here (covered over HTTP in
//! `inventory.rs`); the race is in the ledger, so it is raced here. moto answers one request at a
//! time, so the interleaving is of the clients' read-decide-write steps (see `races.rs`).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use relevo_app::inventory::{InventoryError, PlanLine};
use relevo_protocol::Principal;
use relevo_state::ledger::{LedgerError, OpStatus};
use relevo_tests::inventory::{agent, person, request, world};
use relevo_tests::race::{Backend, Seed};
use serde_json::Value;

/// The reports about `id` in every answer.
fn reports_of<'a>(answers: &'a [Vec<Value>], id: &str) -> Vec<&'a Value> {
    answers
        .iter()
        .flatten()
        .filter(|r| r["operationId"] == id)
        .collect()
}

/// Concurrent `inventory_apply` by one agent on every instance: each authorized operation is
/// committed once and reaches the downstream once; every answer that carries a receipt carries
/// the one receipt.
async fn concurrent_applies_make_one_effect_per_operation(kind: Backend) {
    let seed = Seed::from_env(&format!("inventory apply race on {kind:?}"));
    let w = world(kind, seed).await;
    let agent = agent("ann");
    let skus: Vec<String> = (0..4).map(|i| format!("MUG-{i}")).collect();
    let mut ids = Vec::new();
    for (i, sku) in skus.iter().enumerate() {
        let op = w
            .at(i)
            .propose(&agent, &request(sku, 5 + i as u64, 0))
            .await
            .unwrap();
        assert_eq!(op.status, OpStatus::Authorized);
        ids.push(op.proposal.operation_id);
    }
    let mut racing = tokio::task::JoinSet::new();
    for racer in 0..8 {
        let (inventory, agent) = (w.at(racer), agent.clone());
        racing.spawn(async move { inventory.apply(&agent, None).await });
    }
    let answers: Vec<Vec<Value>> = racing
        .join_all()
        .await
        .into_iter()
        .map(|a| a.unwrap())
        .collect();
    let last = w.at(0).apply(&agent, None).await.unwrap();
    let effects = w.effects();
    for (i, (id, sku)) in ids.iter().zip(&skus).enumerate() {
        seed.check(
            effects.get(id).copied() == Some(1),
            format!("{id}: {:?} downstream effects", effects.get(id)),
        );
        seed.check(
            w.stock_commits(sku) == 1,
            format!("{sku}: {} stock commits", w.stock_commits(sku)),
        );
        seed.check(
            w.stock(sku).await == (5 + i as u64, 1),
            format!("{sku}: stock {:?}", w.stock(sku).await),
        );
        let final_report = reports_of(std::slice::from_ref(&last), id);
        seed.check(
            final_report.len() == 1 && final_report[0]["status"] == "succeeded",
            format!("{id}: {last:?}"),
        );
        let receipt = &final_report[0]["receipt"];
        for report in reports_of(&answers, id) {
            seed.check(
                report["receipt"].is_null() || report["receipt"] == *receipt,
                format!("{id}: a reply names another receipt: {report}"),
            );
            seed.check(
                ["succeeded", "executing"].contains(&report["status"].as_str().unwrap_or("")),
                format!("{id}: a racing apply reported {report}"),
            );
        }
    }
}

/// Several agents propose changes of one item at the same version, some small (authorized by
/// policy), some large (approved by a person while the others apply), and all apply at once on
/// every instance: one winner; every other is rejected as a version conflict and has no effect.
async fn proposals_on_one_version_have_one_winner(kind: Backend) {
    let seed = Seed::from_env(&format!("inventory version race on {kind:?}"));
    let mut rng = seed.rng(7);
    let w = world(kind, seed).await;
    for round in 0..4u64 {
        let sku = format!("CUP-{round}");
        w.seed_stock(&sku, 10).await;
        let agents: Vec<Principal> = (0..4)
            .map(|i| agent(&format!("agent-{round}-{i}")))
            .collect();
        let mut ops = Vec::new();
        for (i, agent) in agents.iter().enumerate() {
            // Even agents want a small change; odd ones a large one that needs a person.
            let to = if i % 2 == 0 {
                12 + i as u64
            } else {
                100 + i as u64
            };
            ops.push(w.at(i).propose(agent, &request(&sku, to, 1)).await.unwrap());
        }
        let mut racing = tokio::task::JoinSet::new();
        for (i, (agent, op)) in agents.iter().zip(&ops).enumerate() {
            let (inventory, agent, op, wait) =
                (w.at(i + 1), agent.clone(), op.clone(), rng.below(10));
            racing.spawn(async move {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                if op.status == OpStatus::Proposed {
                    inventory
                        .decide(&person("boss"), &op.proposal.operation_id, &op.digest, true)
                        .await
                        .unwrap();
                }
                inventory.apply(&agent, None).await.unwrap()
            });
        }
        racing.join_all().await;
        let mut outcomes = BTreeMap::new();
        for (agent, op) in agents.iter().zip(&ops) {
            let id = &op.proposal.operation_id;
            let (final_op, _) = w.at(0).operation("acme", id).await.unwrap().unwrap();
            outcomes.insert(
                id.clone(),
                (
                    final_op.status,
                    op.proposal.arguments["to"].as_u64().unwrap(),
                ),
            );
            let reports = w
                .at(2)
                .apply(agent, Some(std::slice::from_ref(id)))
                .await
                .unwrap();
            seed.check(
                reports[0]["status"] == final_op.status.as_str(),
                format!("{id}: {reports:?} vs {final_op:?}"),
            );
        }
        let winners: Vec<u64> = outcomes
            .values()
            .filter(|(s, _)| *s == OpStatus::Succeeded)
            .map(|(_, to)| *to)
            .collect();
        seed.check(
            winners.len() == 1,
            format!("round {round}: winners {outcomes:?}"),
        );
        seed.check(
            outcomes
                .values()
                .all(|(s, _)| [OpStatus::Succeeded, OpStatus::Rejected].contains(s)),
            format!("round {round}: unfinished {outcomes:?}"),
        );
        seed.check(
            w.stock(&sku).await == (winners[0], 2),
            format!("round {round}: stock {:?}", w.stock(&sku).await),
        );
        seed.check(
            w.stock_commits(&sku) == 2,
            format!(
                "round {round}: {} commits (1 seed + 1)",
                w.stock_commits(&sku)
            ),
        );
        let effects = w.effects();
        for (id, (status, _)) in &outcomes {
            let expected = usize::from(*status == OpStatus::Succeeded);
            seed.check(
                effects.get(id).copied().unwrap_or(0) == expected,
                format!(
                    "round {round}: {id} {status:?} has {:?} effects",
                    effects.get(id)
                ),
            );
        }
    }
}

/// Two people decide one operation at once, one approving and one rejecting, on different
/// instances: one decision is recorded, the other is refused, and the operation ends as decided.
async fn two_people_deciding_at_once_make_one_decision(kind: Backend) {
    let seed = Seed::from_env(&format!("approval race on {kind:?}"));
    let mut rng = seed.rng(9);
    let w = world(kind, seed).await;
    let agent = agent("dan");
    w.seed_stock("BOWL", 10).await;
    for round in 0..6 {
        let (_, version) = w.stock("BOWL").await;
        let op = w
            .at(0)
            .propose(&agent, &request("BOWL", 500 + 100 * round, version))
            .await
            .unwrap();
        assert_eq!(
            op.status,
            OpStatus::Proposed,
            "a large change needs a person"
        );
        let id = op.proposal.operation_id.clone();
        let mut deciding = tokio::task::JoinSet::new();
        for (i, (who, approve)) in [
            ("pat", true),
            ("quinn", false),
            ("pat", true),
            ("quinn", false),
        ]
        .iter()
        .enumerate()
        {
            let (inventory, id, digest, wait) =
                (w.at(i), id.clone(), op.digest.clone(), rng.below(8));
            let (who, approve) = (person(who), *approve);
            deciding.spawn(async move {
                tokio::time::sleep(Duration::from_millis(wait)).await;
                (approve, inventory.decide(&who, &id, &digest, approve).await)
            });
        }
        let answers = deciding.join_all().await;
        let accepted: Vec<bool> = answers
            .iter()
            .filter(|(_, a)| a.is_ok())
            .map(|(approve, _)| *approve)
            .collect();
        seed.check(
            accepted.len() == 1,
            format!(
                "round {round}: {} decisions accepted: {answers:?}",
                accepted.len()
            ),
        );
        for (_, answer) in answers.iter().filter(|(_, a)| a.is_err()) {
            seed.check(
                matches!(
                    answer,
                    Err(InventoryError::Ledger(LedgerError::IllegalTransition {
                        from: "authorized" | "rejected",
                        ..
                    })) | Err(InventoryError::Ledger(LedgerError::Raced))
                ),
                format!("round {round}: a losing decision answered {answer:?}"),
            );
        }
        let (final_op, _) = w.at(1).operation("acme", &id).await.unwrap().unwrap();
        let expected = if accepted[0] {
            OpStatus::Authorized
        } else {
            OpStatus::Rejected
        };
        seed.check(
            final_op.status == expected,
            format!("round {round}: decided {accepted:?}, ended {final_op:?}"),
        );
        let decisions = w
            .store
            .applied("operation")
            .into_iter()
            .filter(|(key, body)| key.id.ends_with(&id) && body["status"] != "proposed")
            .count();
        seed.check(
            decisions == 1,
            format!("round {round}: {decisions} decision writes"),
        );
        if accepted[0] {
            // Leave the desk clear for the next round.
            w.at(2).apply(&agent, None).await.unwrap();
        }
    }
}

/// A plan applied on every instance at once, while another agent changes one of its items at the
/// same version: the plan commits at most once (every answer that applied it is the one result),
/// and on the contested item exactly one of the two wins.
async fn a_plan_is_applied_at_most_once(kind: Backend) {
    let seed = Seed::from_env(&format!("plan race on {kind:?}"));
    let w = world(kind, seed).await;
    let skus = ["PLATE-A", "PLATE-B", "PLATE-C"];
    for sku in skus {
        w.seed_stock(sku, 10).await;
    }
    let planner = agent("eve");
    let lines: Vec<PlanLine> = skus
        .iter()
        .map(|s| PlanLine {
            sku: s.to_string(),
            quantity: Some(15),
        })
        .collect();
    let plan = w.at(0).plan(&planner, "main", &lines).await.unwrap();
    let plan_id = plan["planId"].as_str().unwrap().to_string();
    let rival = agent("finn");
    let rival_op = w
        .at(1)
        .propose(&rival, &request("PLATE-B", 12, 1))
        .await
        .unwrap();
    let mut racing = tokio::task::JoinSet::new();
    for racer in 0..6 {
        let (inventory, planner, plan_id) = (w.at(racer), planner.clone(), plan_id.clone());
        racing.spawn(async move {
            Err::<Vec<Value>, _>(inventory.apply_plan(&planner, &plan_id, 100).await)
        });
    }
    {
        let (inventory, rival) = (w.at(2), rival.clone());
        racing.spawn(async move { Ok(inventory.apply(&rival, None).await.unwrap()) });
    }
    let mut plan_answers = Vec::new();
    for answer in racing.join_all().await {
        if let Err(plan_answer) = answer {
            plan_answers.push(plan_answer);
        }
    }
    let plan_commits = w
        .store
        .history()
        .into_iter()
        .filter(|h| h.applied && h.call == "transact")
        .filter(|h| {
            h.writes
                .iter()
                .any(|(key, _)| key.kind == "inventory-plan" && key.id == plan_id)
        })
        .count();
    seed.check(
        plan_commits <= 1,
        format!("the plan committed {plan_commits} times"),
    );
    let applied: BTreeSet<String> = plan_answers
        .iter()
        .filter_map(|a| a.as_ref().ok())
        .map(Value::to_string)
        .collect();
    seed.check(
        applied.len() <= 1,
        format!("applies answered different results: {applied:?}"),
    );
    for answer in plan_answers.iter().filter_map(|a| a.as_ref().err()) {
        seed.check(
            matches!(
                answer,
                InventoryError::VersionConflict { .. } | InventoryError::Ledger(LedgerError::Raced)
            ),
            format!("a plan apply failed with {answer:?}"),
        );
    }
    let (rival_final, _) = w
        .at(0)
        .operation("acme", &rival_op.proposal.operation_id)
        .await
        .unwrap()
        .unwrap();
    let plan_won = plan_commits == 1;
    seed.check(
        plan_won != (rival_final.status == OpStatus::Succeeded),
        format!(
            "PLATE-B: plan committed {plan_won}, rival {:?}",
            rival_final.status
        ),
    );
    seed.check(
        w.stock_commits("PLATE-B") == 2,
        format!(
            "PLATE-B: {} commits (1 seed + 1)",
            w.stock_commits("PLATE-B")
        ),
    );
    let expected_b = if plan_won { 15 } else { 12 };
    seed.check(
        w.stock("PLATE-B").await == (expected_b, 2),
        format!("PLATE-B {:?}", w.stock("PLATE-B").await),
    );
    let others = if plan_won { (15, 2) } else { (10, 1) };
    for sku in ["PLATE-A", "PLATE-C"] {
        seed.check(
            w.stock(sku).await == others,
            format!("{sku} {:?} (plan won {plan_won})", w.stock(sku).await),
        );
    }
}

/// The salami, raced: agents on every instance propose small changes of one item at once. The
/// units authorized without a person never add up past the threshold; the rest wait for one.
async fn small_changes_raced_at_once_never_add_up_past_the_threshold(kind: Backend) {
    let seed = Seed::from_env(&format!("salami race on {kind:?}"));
    let mut rng = seed.rng(13);
    let w = world(kind, seed).await;
    w.seed_stock("SPOON", 10).await;
    let mut racing = tokio::task::JoinSet::new();
    for i in 0..8u64 {
        let (inventory, agent, wait) = (
            w.at(i as usize),
            agent(&format!("slicer-{i}")),
            rng.below(10),
        );
        racing.spawn(async move {
            tokio::time::sleep(Duration::from_millis(wait)).await;
            // Each +8: alone within the threshold of 20, three of them past it.
            inventory
                .propose(&agent, &request("SPOON", 18 + i % 2, 1))
                .await
        });
    }
    let mut by_policy = 0;
    for proposed in racing.join_all().await {
        let proposed = proposed.unwrap();
        if proposed.status == OpStatus::Authorized {
            by_policy += proposed.proposal.arguments["to"].as_u64().unwrap() - 10;
        } else {
            seed.check(
                proposed.status == OpStatus::Proposed,
                format!("{proposed:?}"),
            );
        }
    }
    seed.check(
        by_policy <= relevo_app::inventory::policy::PERSON_THRESHOLD,
        format!("{by_policy} units were authorized without a person"),
    );
    seed.check(by_policy > 0, "the first slice fits".to_string());
}

async fn all(kind: Backend) {
    concurrent_applies_make_one_effect_per_operation(kind).await;
    proposals_on_one_version_have_one_winner(kind).await;
    two_people_deciding_at_once_make_one_decision(kind).await;
    a_plan_is_applied_at_most_once(kind).await;
    small_changes_raced_at_once_never_add_up_past_the_threshold(kind).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inventory_races_on_sqlite() {
    all(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inventory_races_on_dynamodb() {
    all(Backend::Dynamo).await;
}
