//! A real `vmd` process on a free loopback port for a test, stopped (by its
//! PID) when the test ends; the processes come from `isthmus-testkit`,
//! shared with the taskers' and the client's tests.

#![allow(dead_code)]

pub use isthmus_testkit::{console, Proc, TempDir};

pub struct VmdProcess {
    /// The vmd's process (derefs to its `Child`).
    pub child: Proc,
    pub addr: String,
    _dir: TempDir,
}

impl VmdProcess {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a vmd with extra flags (limits, deadlines).
    pub fn start_with(flags: &[&str]) -> Self {
        let isthmus_testkit::Vmd {
            proc, addr, dir, ..
        } = isthmus_testkit::Vmd::start("testhost", flags);
        VmdProcess {
            child: proc,
            addr,
            _dir: dir,
        }
    }
}
