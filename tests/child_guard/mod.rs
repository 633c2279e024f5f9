//! A child process that never outlives its test: killed and reaped when the
//! guard is dropped, on success, on an early return and on a panic alike.

use std::ops::{Deref, DerefMut};
use std::process::Child;

pub struct ChildGuard(Child);

impl ChildGuard {
    pub fn new(child: Child) -> ChildGuard {
        ChildGuard(child)
    }
}

impl Deref for ChildGuard {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // Already reaped by the test (`wait`): nothing to do, and a kill would
        // only fail. Otherwise kill it and wait, so no zombie or orphan stays.
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
