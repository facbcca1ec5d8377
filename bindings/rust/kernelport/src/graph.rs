// SPDX-License-Identifier: Apache-2.0
//! Graphs: a sequence of launches, copies and fills recorded once and replayed with one call
//! (`kp_graph`, docs/graphs.md).

use std::marker::PhantomData;
use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use crate::buffer::Element;
use crate::error::{Error, Result, Status};
use crate::event::Event;
use crate::raw;
use crate::runtime::Runtime;
use crate::tensor::Tensor;

/// This thread's recording on a runtime, from `Runtime::record` to `end`: its launches, copies
/// and fills (typed calls included) are checked and captured instead of run; its host transfers
/// and timed launches fail. Dropped without `end`, the recording stops and its graph is discarded.
pub struct Recording<'rt> {
    rt: &'rt Runtime,
    ended: bool,
    // The library records per thread (kp_graph_begin "starts recording on this thread"), so the
    // recording cannot move to another one: neither Send nor Sync.
    _thread: PhantomData<*const ()>,
}

impl Runtime {
    /// Starts recording this thread's calls on the runtime (`kp_graph_begin`; `flags`:
    /// `sys::KP_GRAPH_NO_COMMAND_BUFFER`, `sys::KP_GRAPH_COMMAND_BUFFER` or 0).
    pub fn record(&self, flags: u32) -> Result<Recording<'_>> {
        // SAFETY: a live runtime.
        self.check(unsafe { sys::kp_graph_begin(self.as_ptr(), flags) })?;
        Ok(Recording { rt: self, ended: false, _thread: PhantomData })
    }
}

impl<'rt> Recording<'rt> {
    /// Argument `arg` of the launch captured last becomes the graph's parameter `param`, which
    /// `Graph::set_*` changes between replays without recording again.
    pub fn param(&self, param: &str, arg: &str) -> Result<()> {
        let (p, a) = (raw::c_string(param, "param")?, raw::c_string(arg, "argument name")?);
        // SAFETY: a live runtime; the strings outlive the call.
        self.rt.check(unsafe { sys::kp_graph_param(self.rt.as_ptr(), p.as_ptr(), a.as_ptr()) })
    }

    /// Stops recording and returns the graph.
    pub fn end(mut self) -> Result<Graph<'rt>> {
        self.ended = true;
        end(self.rt)
    }
}

/// kp_graph_end; on an error after which the library still hands out the graph, it is released.
fn end(rt: &Runtime) -> Result<Graph<'_>> {
    let mut g = ptr::null_mut();
    // SAFETY: this thread records on rt (Recording exists only then).
    let st = unsafe { sys::kp_graph_end(rt.as_ptr(), &mut g) };
    let graph = NonNull::new(g).map(|raw| Graph { rt, raw });
    rt.check(st)?;
    graph.ok_or_else(|| Error::new(Status::Internal, "kp_graph_end gave no graph"))
}

impl<'rt> Drop for Recording<'rt> {
    fn drop(&mut self) {
        if !self.ended {
            // The recording must stop on this thread; the graph it made is dropped with it.
            let _ = end(self.rt);
        }
    }
}

/// A recorded sequence, replayed many times. Released by Drop (after the work its replays
/// queued).
pub struct Graph<'rt> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_graph>,
}

// The header: "a graph is used by one thread at a time; its replays are serialised with the
// runtime's other launches". Send, not Sync; its calls take &mut.
unsafe impl<'rt> Send for Graph<'rt> {}

/// What a graph holds (`kp_graph_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphInfo {
    pub launches: usize,
    pub transfers: usize,
    /// Launches that run their enqueue at each replay (library-backed kernels).
    pub direct: usize,
    pub commands: usize,
    pub command_buffers: usize,
    pub params: usize,
}

impl<'rt> Graph<'rt> {
    /// Runs the recorded sequence once, asynchronously, after the runtime's earlier work.
    pub fn replay(&mut self) -> Result<()> {
        // SAFETY: owned and live; no event asked.
        self.rt.check(unsafe { sys::kp_graph_replay(self.raw.as_ptr(), ptr::null_mut()) })
    }

    /// As `replay`, with an event spanning the whole replay.
    pub fn replay_timed(&mut self) -> Result<Event<'rt>> {
        let mut ev = ptr::null_mut();
        // SAFETY: owned and live; ev receives a caller-owned event.
        self.rt.check(unsafe { sys::kp_graph_replay(self.raw.as_ptr(), &mut ev) })?;
        NonNull::new(ev)
            .map(|e| Event::from_raw(self.rt, e))
            .ok_or_else(|| Error::new(Status::Internal, "kp_graph_replay gave no event"))
    }

    /// Gives parameter `param` a new value for the next replays (checked as a launch checks it;
    /// on error nothing changes). A buffer it names that is dropped makes a replay fail, naming
    /// the launch.
    pub fn set_tensor<T: Element>(&mut self, param: &str, t: &Tensor<'_, T>) -> Result<()> {
        let p = raw::c_string(param, "param")?;
        // SAFETY: owned and live; p outlives the call.
        self.rt.check(unsafe { sys::kp_graph_set_tensor(self.raw.as_ptr(), p.as_ptr(), t.raw()) })
    }

    pub fn set_int(&mut self, param: &str, v: i64) -> Result<()> {
        let p = raw::c_string(param, "param")?;
        // SAFETY: as set_tensor.
        self.rt.check(unsafe { sys::kp_graph_set_int(self.raw.as_ptr(), p.as_ptr(), v) })
    }

    pub fn set_float(&mut self, param: &str, v: f64) -> Result<()> {
        let p = raw::c_string(param, "param")?;
        // SAFETY: as set_tensor.
        self.rt.check(unsafe { sys::kp_graph_set_float(self.raw.as_ptr(), p.as_ptr(), v) })
    }

    pub fn info(&self) -> Result<GraphInfo> {
        let mut i = raw::graph_info();
        // SAFETY: i has struct_size set.
        self.rt.check(unsafe { sys::kp_graph_get_info(self.raw.as_ptr(), &mut i) })?;
        Ok(GraphInfo {
            launches: i.n_launches,
            transfers: i.n_transfers,
            direct: i.n_direct,
            commands: i.n_commands,
            command_buffers: i.n_command_buffers,
            params: i.n_params,
        })
    }

    /// One line per launch and transfer, then the parameters.
    pub fn describe(&self) -> Result<String> {
        let mut buf = vec![0 as c_char; 16384];
        // SAFETY: buf's size is passed; the text is truncated and NUL-terminated within it.
        self.rt.check(unsafe {
            sys::kp_graph_describe(self.raw.as_ptr(), buf.as_mut_ptr(), buf.len())
        })?;
        Ok(raw::array_string(&buf))
    }
}

impl<'rt> Drop for Graph<'rt> {
    fn drop(&mut self) {
        // SAFETY: owned; the runtime outlives it.
        unsafe { sys::kp_graph_destroy(self.raw.as_ptr()) }
    }
}
