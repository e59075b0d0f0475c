//! {{name}}: the tools this server serves. `app` is what every function, the worker and the
//! local server take; add a tool by writing a function and registering it in [`app`].
//!
//! - `hello`: a pure tool: typed arguments in, a typed result out, both schemas derived.
//! - `book`: asks the user first (MRTR elicitation), then starts the durable `confirm` job.
//! - `booking`: what became of a booking: its job's status and typed result.
//!
//! Every tool is a plain `async fn`: the job engine comes with its [`ToolContext`].
//!
//! Invariant: one confirmed quote is one booking. The question's round id travels sealed in
//! `requestState` (bound to the caller, the tool and its arguments) and is the job's operation
//! key, so a confirmed call retried on any instance, or sent twice, finds the same job.

use relevo::prelude::*;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
pub struct HelloArgs {
    /// Who to greet
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
pub struct Hello {
    pub greeting: String,
}

pub async fn hello(args: HelloArgs, _: ToolContext) -> Result<Hello, ToolError> {
    Ok(Hello {
        greeting: format!("Hello, {}!", args.name),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", deny_unknown_fields)]
pub struct BookArgs {
    /// The day, e.g. 2027-01-15
    #[schemars(length(min = 10, max = 10))]
    pub day: String,
    /// How many guests
    #[schemars(range(min = 1, max = 12))]
    pub guests: u32,
}

/// What the question was, carried (sealed) to the round that has the answer.
#[derive(Serialize, Deserialize)]
#[serde(crate = "relevo::serde")]
struct Quote {
    deposit_cents: u32,
}

/// The form the user fills.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
struct Confirm {
    /// Book it and pay the deposit
    confirm: bool,
}

/// The `confirm` job's input: the booking the user confirmed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "relevo::serde")]
pub struct Booking {
    pub day: String,
    pub guests: u32,
    pub deposit_cents: u32,
}

/// The `confirm` job's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
pub struct Confirmation {
    pub code: String,
    pub day: String,
    pub guests: u32,
}

/// A durable job: started by `book`, run by the worker (SQS in production, the embedded queue
/// locally), retried within its attempt budget. `Booking` in, `Confirmation` out: starting it
/// with anything else, or reading anything else back, does not compile.
pub const CONFIRM: JobKind<Booking, Confirmation> = JobKind::new("confirm");

/// Where a real app would call the restaurant's API (with the job's id as its idempotency key).
pub async fn confirm(booking: Booking, cx: JobContext) -> Result<Confirmation, JobError> {
    // What `booking` (and a Tasks client's `statusMessage`) shows while the job works.
    cx.progress("calling the restaurant").await?;
    let code = format!("T{}-{}", booking.day.replace('-', ""), booking.guests);
    Ok(Confirmation {
        code,
        day: booking.day,
        guests: booking.guests,
    })
}

#[derive(Serialize, JsonSchema)]
#[serde(crate = "relevo::serde", rename_all = "camelCase")]
pub struct Booked {
    /// Ask `booking` about it
    pub booking_id: String,
    pub day: String,
    pub guests: u32,
    pub deposit_cents: u32,
}

/// Asks the user to confirm the deposit (the first call answers `input_required`); the
/// confirmed retry starts the `confirm` job, once per question asked.
pub async fn book(args: BookArgs, cx: ToolContext) -> Result<Booked, ToolError> {
    let quote = cx.state::<Quote>().unwrap_or(Quote {
        deposit_cents: args.guests * 500,
    });
    let question = format!(
        "Book {} guests on {} for a deposit of ${}?",
        args.guests,
        args.day,
        quote.deposit_cents / 100
    );
    match cx.elicit_with::<Confirm, _>("confirm", &question, &quote)? {
        Elicited::Accept(Confirm { confirm: true }) => {
            let booking = Booking {
                day: args.day,
                guests: args.guests,
                deposit_cents: quote.deposit_cents,
            };
            // The answered round's id: the same for a retry of this answer, new for every question.
            let job = cx.start_job(&CONFIRM, cx.round(), &booking).await?;
            Ok(Booked {
                booking_id: job.job.id,
                day: booking.day,
                guests: booking.guests,
                deposit_cents: booking.deposit_cents,
            })
        }
        _ => Err(ToolError::caller(
            "The booking was not confirmed; nothing was booked.",
        )),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "relevo::serde", rename_all = "camelCase", deny_unknown_fields)]
pub struct BookingArgs {
    /// The bookingId that `book` returned
    #[schemars(length(min = 1, max = 64))]
    pub booking_id: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(crate = "relevo::serde")]
pub struct BookingStatus {
    /// queued, running, succeeded, failed or cancelled
    pub status: String,
    /// What the job last said while it works
    pub progress: Option<String>,
    /// Set once the booking is confirmed
    pub confirmation: Option<Confirmation>,
}

/// The caller's booking: another caller's id reads as unknown.
pub async fn booking(args: BookingArgs, cx: ToolContext) -> Result<BookingStatus, ToolError> {
    let job = cx.find_job(&CONFIRM, &args.booking_id).await?;
    let job = job.or_caller(format!("No booking {}", args.booking_id))?;
    Ok(BookingStatus {
        status: job.status().into(),
        progress: job.state.progress().map(String::from),
        confirmation: job.state.output().cloned(),
    })
}

pub fn app(ports: &Ports) -> App {
    let pure = ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true);
    let mut app = App::new("{{name}}", env!("CARGO_PKG_VERSION"))
        .tool(Tool::typed("hello", "Greets a person by name.", hello).annotations(pure.clone()));
    // Bookings need the durable jobs (a store and a queue): without them they are left out.
    if ports.jobs.is_some() {
        app = app
            .tool(
                Tool::typed(
                    "book",
                    "Books a table after you confirm the deposit; returns a bookingId.",
                    book,
                )
                .annotations(
                    ToolAnnotations::new()
                        .read_only(false)
                        .destructive(false)
                        .idempotent(true),
                ),
            )
            .tool(
                Tool::typed(
                    "booking",
                    "Reports a booking and, once confirmed, its confirmation code.",
                    booking,
                )
                .annotations(pure),
            )
            .job(&CONFIRM, confirm);
    }
    app.with_manifest()
}
