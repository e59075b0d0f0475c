//! `template.yaml` as CloudFormation sees it.
//!
//! The input is the SAM translation of the template (`infra/cli/src/sam_translate.py`, the
//! translator the pinned SAM CLI ships, exactly what `sam deploy` submits). A [`Template`] is that
//! JSON; [`Template::instantiate`] evaluates it for one parameter set, as a stack would be:
//! parameters (defaults and overrides), conditions, and the resources whose condition holds.
//! A [`Stack`] resolves intrinsic functions (`Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::If`, …) against
//! physical ids ([`PhysicalIds`]: synthetic for the deploy check, the emulator's for local Lambda
//! mode) and reads the models everything else uses: functions, their policies, APIs and their
//! routes, routing rules, queues, event source mappings and schedules.
//!
//! Two users, one reading:
//! - the offline deploy check ([`check`]) refuses what CloudFormation and API Gateway would refuse;
//! - local Lambda mode (`relevo-lambda-local`) runs the functions, routes and event sources the
//!   template declares, so a route, variable or timeout that is wrong in the template is wrong
//!   locally too.
//!
//! Nothing here talks to AWS or to the emulator.

pub mod apis;
pub mod check;
mod error;
pub mod functions;
pub mod graph;
pub mod iam;
mod intrinsics;
pub mod logging;
mod physical;
pub mod routing;
mod stack;

pub use error::TemplateError;
pub use logging::Logging;
pub use physical::{ACCOUNT_ID, PhysicalIds, REGION};
pub use stack::{Resource, Stack, Template};
