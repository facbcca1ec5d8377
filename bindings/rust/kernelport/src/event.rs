// SPDX-License-Identifier: Apache-2.0
//! Events: the commands of one launch, for waiting and timing (`kp_event`).

use std::ptr::NonNull;
use std::time::Duration;

use kernelport_sys as sys;

use crate::error::Result;
use crate::runtime::Runtime;

/// The commands of one launch. Released by Drop.
pub struct Event<'rt> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_event>,
}

// Neither Send nor Sync (the raw pointer's default): the header documents no thread-safety for
// kp_event_wait, kp_event_elapsed or kp_event_destroy, so an event stays on the launching thread.

impl<'rt> Event<'rt> {
    pub(crate) fn from_raw(rt: &'rt Runtime, raw: NonNull<sys::kp_event>) -> Event<'rt> {
        Event { rt, raw }
    }

    /// Waits for the launch's commands.
    pub fn wait(&self) -> Result<()> {
        // SAFETY: an event of this live runtime.
        self.rt.check(unsafe { sys::kp_event_wait(self.rt.as_ptr(), self.raw.as_ptr()) })
    }

    /// Waits, then the device time from the start of the first command to the end of the last
    /// (profiling counters; wall time on the host device), in seconds.
    pub fn elapsed_seconds(&self) -> Result<f64> {
        let mut s = 0.0;
        // SAFETY: as wait.
        self.rt
            .check(unsafe { sys::kp_event_elapsed(self.rt.as_ptr(), self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }

    /// `elapsed_seconds` as a Duration.
    pub fn elapsed(&self) -> Result<Duration> {
        // from_secs_f64 panics on what no Duration holds; a driver's nonsense is not worth one.
        self.elapsed_seconds().map(|s| {
            if s.is_finite() && s < 1e12 {
                Duration::from_secs_f64(s.max(0.0))
            } else {
                Duration::MAX
            }
        })
    }
}

impl<'rt> Drop for Event<'rt> {
    fn drop(&mut self) {
        // SAFETY: owned, of this runtime.
        unsafe { sys::kp_event_destroy(self.rt.as_ptr(), self.raw.as_ptr()) }
    }
}
