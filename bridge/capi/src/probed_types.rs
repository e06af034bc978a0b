//! What a probe of the local MPI found, per predefined datatype: whether
//! one of its predefined operations is right on that type (`unsigned_ops`
//! for MAX/MIN, `narrow_sum` for SUM), asked once per type and process.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::mpi_glue::MPI_Datatype;

/// Per datatype handle: the probe's verdict.
pub(crate) struct ProbedTypes(Mutex<Option<HashMap<usize, bool>>>);

impl ProbedTypes {
    pub(crate) const fn new() -> ProbedTypes {
        ProbedTypes(Mutex::new(None))
    }

    /// The verdict on `dt`, from `probe` the first time (run under the
    /// lock, so that concurrent first uses probe once).
    pub(crate) fn verdict(&self, dt: MPI_Datatype, probe: impl FnOnce() -> bool) -> bool {
        let mut probed = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let probed = probed.get_or_insert_with(HashMap::new);
        *probed.entry(dt.0 as usize).or_insert_with(probe)
    }
}
