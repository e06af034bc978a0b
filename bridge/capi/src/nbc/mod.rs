//! The nonblocking collectives' machinery: a schedule per request,
//! advanced one non-blocking step at a time by every interposed wait and
//! test (`requests`), so that an initiation (`MPI_Ibcast`, ...) never
//! blocks and a program that only polls `MPI_Test` sees its collective
//! complete, as MPI's progress rule asks.
//!
//! A schedule is a chain of [`Stage`]s. A stage waits for requests — native
//! ones of the job's own MPI (a `PMPI_I*` step, tested with `PMPI_Test`)
//! and the bridge's sends and receives (tested without blocking) — and,
//! once they have all completed, runs its continuation, which issues the
//! next requests and returns the next stage, or says the operation is done.
//! The program holds a generalized request (`requests::open`), completed
//! (with the operation's error, if any) when its schedule ends. Every
//! pending schedule of the process is advanced whenever any interposed wait
//! or test runs ([`progress`], called by `requests`, which completes the
//! requests of the schedules that ended), whatever request it is called on,
//! so that two jobs each waiting on something else still progress.
//!
//! Order. MPI has every process start the collectives of a communicator in
//! the same order, so the n-th nonblocking collective on it has the same
//! sequence number `n` everywhere: its bridge messages are tagged with it
//! (on the intercommunicator's nonblocking-collective context, see
//! `isthmus_bridge::InterComm::nbc_isend`), so two operations outstanding on
//! one communicator never take each other's messages. Its native steps run
//! on a private duplicate of the job's side made for them at the first one
//! (`MPI_Comm_idup`, so that even that does not block; apart from the
//! blocking collectives' duplicate, whose calls a pending schedule would
//! otherwise cross), and a job's ranks must issue them in one order: an
//! operation's native steps wait for its *turn* — until every operation
//! started before it on the communicator has issued all of its own (see
//! [`side::Side`]). Stages that issue native steps say so ([`Stage::native`]).

pub(crate) mod deferred;
mod schedule;
mod share;
pub(crate) mod side;

pub(crate) use schedule::{
    idle, owns, progress, retire, Arrivals, Cx, Fail, Next, Op, Stage, Step, Wait,
};
pub(crate) use share::{share, share_blocks, share_outcome, Share};
