// SPDX-License-Identifier: Apache-2.0
//! Mistakes give Err with the library's status and message, never a panic, and the runtime
//! stays usable after each.

mod common;

use common::runtime;
use kernelport::ops::gru::{self, Step};
use kernelport::{RuntimeOptions, Status};

#[test]
fn unknown_kernel_is_not_found() {
    let e = runtime().kernel("gru.stpe").unwrap_err();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().contains("gru.stpe"), "{}", e);
    assert!(e.to_string().starts_with("KP_ERR_NOT_FOUND: "), "{}", e);
}

#[test]
fn wrong_shape_names_the_argument() {
    let rt = &runtime();
    let x = rt.buffer::<f32>(2 * 3).unwrap();
    let h = rt.buffer::<f32>(2 * 4).unwrap();
    let w_ih = rt.buffer::<f32>(12 * 4).unwrap();
    let w_hh = rt.buffer::<f32>(12 * 4).unwrap();
    let out = rt.buffer::<f32>(2 * 4).unwrap();
    let mut s = Step {
        x: x.view(&[2, 3]).unwrap(),
        h: h.view(&[2, 4]).unwrap(),
        // I is 3 (x's), so [3H, I] = [12, 3]: [12, 4] is wrong.
        w_ih: w_ih.view(&[12, 4]).unwrap(),
        w_hh: w_hh.view(&[12, 4]).unwrap(),
        b_ih: None,
        b_hh: None,
        h_out: out.view(&[2, 4]).unwrap(),
        linear_before_reset: true,
    };
    let e = gru::step(rt, &s).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArg);
    assert!(e.message().contains("gru.step") && e.message().contains("w_ih"), "{}", e);
    // The runtime is still usable: the right shape launches.
    s.w_ih = w_ih.view(&[12, 3]).unwrap();
    gru::step(rt, &s).unwrap();
}

#[test]
fn bad_arguments_are_refused() {
    let rt = &runtime();
    let k = rt.kernel("example.axpy").unwrap();
    let x = rt.buffer::<f32>(5).unwrap();
    // A missing argument, an unknown one, a NUL byte in a name.
    let e = k.launch().float("alpha", 1.0).tensor("x", &x.tensor()).run().unwrap_err();
    assert_eq!(e.status(), Status::InvalidArg, "{}", e);
    let e = k.launch().int("n", 5).int("bogus", 1).run().unwrap_err();
    assert!(e.message().contains("bogus"), "{}", e);
    let e = k.launch().int("n\0", 5).run().unwrap_err();
    assert_eq!(e.status(), Status::InvalidArg, "{}", e);
    // A view past its buffer, a rank above 8, a read past the end.
    let e = k
        .launch()
        .int("n", 6)
        .float("alpha", 1.0)
        .tensor("x", &x.view(&[6]).unwrap())
        .tensor("y", &x.view(&[6]).unwrap())
        .run()
        .unwrap_err();
    assert_eq!(e.status(), Status::InvalidArg, "{}", e);
    assert!(x.view(&[1; 9]).is_err());
    let mut out = [0f32; 6];
    let e = x.read(0, &mut out).unwrap_err();
    assert!(e.message().contains("outside the buffer"), "{}", e);
}

#[test]
fn unknown_device_is_no_device() {
    let e = RuntimeOptions::new().device("no-such-device-xyz").no_env().create().err().unwrap();
    assert_eq!(e.status(), Status::NoDevice, "{}", e);
    assert!(e.message().contains("no-such-device-xyz"), "{}", e);
}

#[test]
fn recordings_end_on_drop() {
    let rt = &runtime();
    let rec = rt.record(0).unwrap();
    // One recording per thread and runtime; a parameter needs a captured launch.
    assert_eq!(rt.record(0).err().unwrap().status(), Status::InvalidArg);
    assert_eq!(rec.param("p", "alpha").unwrap_err().status(), Status::InvalidArg);
    drop(rec);
    // Dropped, it stopped: transfers run again, and a new recording starts.
    let b = rt.buffer_from(&[1.0f32, 2.0]).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![1.0, 2.0]);
    let g = rt.record(0).unwrap().end().unwrap();
    assert_eq!(g.info().unwrap().launches, 0);
}
