//! The intercommunicator of `MPI_Comm_spawn_multiple` whose commands are
//! of two implementations (`crate::spawn`, `crate::parent`): the children
//! are the two parts of one world (`crate::world`), so it is a mixed
//! intercommunicator over three jobs — the parents' job, and the two
//! parts. Each process reaches every process of another job over one
//! bridge intercommunicator (`InterComm::joined`: the parents met each
//! part on its own, and a child's other part is its world's), so
//! point-to-point and the collectives (MPICH's `coll/inter` algorithms:
//! two leaders and each group's own intracommunicator) work as on any
//! mixed intercommunicator. What needs a communicator over the three jobs
//! at once is refused: `MPI_Intercomm_merge` (a merged communicator spans
//! two jobs).

use std::ffi::c_int;

use isthmus_bridge::{BridgeError, InterComm};
use mpi::ffi;

use crate::merged::{contexts, duplicate, free_native, mpi, private_dup, Fail};
use crate::mpi_glue::MPI_Comm;
use crate::state::{self, LocalGroup, Member, MergedComm, MixedColl, MixedInter, Order, Place};

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The remote group's places: every remote rank in `inter`, in order.
fn remote_places(n: u32) -> Order {
    Order::of((0..n).map(Place::Remote).collect(), 0)
}

/// Registers the mixed intercommunicator under a new native handle, a
/// duplicate of `native` (this job's members: the parents, or one part).
fn register(
    native: MPI_Comm,
    local: LocalGroup,
    inter: InterComm,
    (rank, local_size, remote_size): (u32, u32, u32),
    union: Vec<Member>,
    (local_group, remote_group): (String, String),
) -> Result<MPI_Comm, Fail> {
    let made = (|| {
        let (inter, coll_inter) = contexts(inter)?;
        let nbc = crate::merged::hidden_side(&coll_inter, (&local_group, &remote_group))?;
        let handle = duplicate(native)?;
        let coll_native = match duplicate(native) {
            Ok(c) => c,
            Err(f) => {
                free_native(handle);
                return Err(f);
            }
        };
        Ok((inter, coll_inter, nbc, handle, coll_native))
    })();
    let (inter, coll_inter, nbc, handle, coll_native) = match made {
        Ok(m) => m,
        Err(f) => {
            super::local::free(&local);
            return Err(f);
        }
    };
    let peers = remote_places(remote_size);
    state::add_mixed(
        handle,
        MixedInter {
            peers: peers.clone(),
            inter,
            coll: MixedColl {
                peers,
                inter: coll_inter,
                native: coll_native,
            },
            nbc,
            rank,
            local_size,
            local,
            union: union.into(),
            local_group,
            remote_group,
            derived: Default::default(),
            three_jobs: true,
        },
    );
    Ok(handle)
}

/// The parents' side: `comm` (the spawning communicator, one job), the
/// bridge intercommunicator to the whole world (`joined`).
pub fn parents(
    comm: MPI_Comm,
    inter: InterComm,
    names: (String, String),
) -> Result<MPI_Comm, Fail> {
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: the program's intracommunicator; out-values.
    mpi(unsafe { ffi::PMPI_Comm_rank(comm, &mut rank) })?;
    // SAFETY: as above.
    mpi(unsafe { ffi::PMPI_Comm_size(comm, &mut size) })?;
    let (rank, size) = (count(rank as usize), count(size as usize));
    let remote = inter.remote_size();
    let union = (0..size)
        .map(|r| Member {
            ours: true,
            rank: r,
            place: Place::Local(r),
        })
        .chain((0..remote).map(|j| Member {
            ours: false,
            rank: j,
            place: Place::Remote(j),
        }))
        .collect();
    let local = LocalGroup::Native(duplicate(comm)?);
    register(comm, local, inter, (rank, size, remote), union, names)
}

/// A child's side: `world` (its world's `MPI_COMM_WORLD`, merged: `mc`),
/// the bridge intercommunicator whose remote group is the `parents`, then
/// the other part's processes (`joined`, as `mc.inter`'s remote group).
pub fn children(
    world: MPI_Comm,
    mc: &MergedComm,
    inter: InterComm,
    parents: u32,
    names: (String, String),
) -> Result<MPI_Comm, Fail> {
    let size = mc.size();
    let mut union = Vec::with_capacity(size as usize + parents as usize);
    for r in 0..size {
        let place = match mc.place(r) {
            Some(Place::Local(n)) => Place::Local(n),
            Some(Place::Remote(j)) => Place::Remote(parents.saturating_add(j)),
            None => {
                return Err(Fail::Bridge(BridgeError::InvalidArgument(format!(
                    "world rank {r} has no place in the world (size {size})"
                ))))
            }
        };
        union.push(Member {
            ours: true,
            rank: r,
            place,
        });
    }
    union.extend((0..parents).map(|j| Member {
        ours: false,
        rank: j,
        place: Place::Remote(j),
    }));
    let local = LocalGroup::Merged(private_dup(mc, world)?);
    // This part's own processes: the world handle's native side.
    register(
        world,
        local,
        inter,
        (mc.rank(), size, parents),
        union,
        names,
    )
}
