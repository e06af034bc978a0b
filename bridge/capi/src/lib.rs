//! Isthmus for C and Fortran programs: `libisthmus.so`, built once per MPI
//! implementation.
//!
//! Two faces:
//! - [`api`]: `Isthmus_Register`, `Isthmus_Leave`, `Isthmus_Intercomm_create`
//!   (and its timeout and non-blocking forms), declared in `isthmus.h`; and
//!   the virtual machine's calls there: [`machine`] (spawn, kill, signal,
//!   jobs, hosts) and [`events`] (notifications).
//! - The interposed MPI calls ([`pt2pt`], [`coll`], [`requests`], [`comms`],
//!   [`ports`], [`spawn`] and [`parent`] (`MPI_Comm_spawn` through the
//!   virtual machine, both sides), [`finalize`] (delivers what was sent before MPI goes), the
//!   [`refused`] ones, their `large_count` and [`fortran`] forms): the
//!   library defines `MPI_Send`, `MPI_Wait`, … itself, as MPI's profiling
//!   interface allows. On a communicator Isthmus created they go over the
//!   bridge; on any other they pass straight to `PMPI_*` after one atomic
//!   load.
//!
//! **One table for the ABI.** Every MPI call the library touches is one
//! line of `mpi-functions.txt`: its class (carried with a body, native, or
//! refused), the module of its body, and its Fortran names. build.rs
//! generates from it and each implementation's `mpi.h` the C shells, the
//! large-count `_c` shells, every Fortran entry point (`ompi_x_f`, `mpi_x_`,
//! `pmpi_x_`, `mpi_x_f08_`), the pass-on shells and every refusal, into
//! `$OUT_DIR`; only the bodies are written by hand. Adding a call is a table
//! line and a body `<module>::x(&bridge_comm, <the call's arguments>)` (and
//! `fortran::ompi::x`/`fortran::mpich_f08::x` for the Fortran names it
//! lists). Data goes through one [`datatype`] glue.
//!
//! A bridge communicator is a real MPI handle: a duplicate of the registered
//! communicator (so rank, size, group, attributes, names, error handlers and
//! Fortran conversion work natively), mapped in [`state`] to the bridge's
//! `InterComm`. A bridge request is a generalized request (`MPI_Grequest_start`),
//! so bridge and native requests mix in one `MPI_Waitall`; the interposed
//! wait and test calls complete the bridge ones and let MPI do the rest. A
//! nonblocking collective's request is one too, completed when its schedule
//! ([`nbc`]: native `PMPI_I*` steps and bridge messages) ends; every
//! interposed wait and test advances every schedule.
//!
//! Errors become MPI error codes in Isthmus's own error classes ([`errors`]),
//! with `MPI_Error_string` giving the bridge's message, and go through the
//! communicator's error handler.
//!
//! [`world`]: with `ISTHMUS_WORLD` set, `MPI_Init` joins the parts of one
//! `MPI_COMM_WORLD` across implementations and registers the world handle
//! as a merged communicator.
//!
//! It sits in `bridge/` because it is the bridge's face for C and Fortran: a
//! thin ABI over `isthmus-bridge`, with no data path of its own.

pub mod abort;
pub mod api;
pub mod appnum;
pub mod coll;
mod collbuf;
pub mod comms;
pub mod datatype;
pub mod errors;
mod failed_requests;
pub mod finalize;
pub mod intercomm_create;
pub mod intercomm_split;
pub mod isendrecv;
pub mod join;
mod lent_send;
mod local_reduce;
mod malloc_policy;
// The standard ABI's first version has no Fortran (build.rs).
mod env_list;
pub mod events;
#[cfg(not(isthmus_mpi_abi))]
pub mod fortran;
pub mod group;
pub mod idup;
mod info;
#[cfg(isthmus_large_count)]
pub mod large_count;
pub mod local_side;
pub mod machine;
pub mod merged;
pub mod mixed;
pub mod mpi_glue;
mod narrow_sum;
mod native_reduce;
mod native_step;
pub mod nbc;
pub mod parent;
mod peer_abort;
pub mod persist;
pub mod ports;
mod probed_types;
pub mod pt2pt;
pub mod refused;
pub mod requests;
pub mod spawn;
mod spawn_command;
pub mod state;
pub mod unsigned_ops;
pub mod world;
mod world_attrs;

// Each `bridge` call of mpi-functions.txt has its body where the line says.
include!(concat!(env!("OUT_DIR"), "/bodies.rs"));
