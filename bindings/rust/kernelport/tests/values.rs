// SPDX-License-Identifier: Apache-2.0
//! The binding's plain values: statuses, element conversions, axes, views and their description,
//! the version, kernel descriptions. A runtime on the host device (nothing is compiled).

mod common;

use common::reference_runtime;
use kernelport::ops::tensor::Axes;
use kernelport::{name_matches, ArgKind, Bf16, DType, Element, Status, F16};

#[test]
fn statuses_and_elements() {
    assert_eq!(Status::NotFound.name(), "KP_ERR_NOT_FOUND");
    assert_eq!(Status::NotFound.description(), "not found");
    assert_eq!(Status::Other(-99).name(), "KP_STATUS_UNKNOWN");
    assert_eq!(F16::from_f32(1.0), F16(0x3c00));
    assert_eq!(F16(0x3c00).to_f32(), 1.0);
    assert_eq!(Bf16::from_f32(-2.0).to_f32(), -2.0);
    assert_eq!((f32::DTYPE.name(), Bf16::DTYPE.name(), u8::DTYPE.name()), ("f32", "bf16", "u8"));
    assert_eq!(i32::DTYPE, DType::I32);
    assert_eq!(Axes::of(&[0, 2]), Axes(5));
    assert_eq!(Axes::ALL, Axes(-1));
    let v = kernelport::version();
    let mm =
        format!("{}.{}.", kernelport::sys::KP_VERSION_MAJOR, kernelport::sys::KP_VERSION_MINOR);
    assert!(v.starts_with(&mm), "library {} for bindings {}", v, mm);
    assert!(name_matches("gru", "gru.step") && !name_matches("gru.s?ep", "gru.sleeps"));
}

#[test]
fn views() {
    let rt = reference_runtime();
    assert_eq!(rt.device().unwrap().device_type, "host");
    let b = rt.buffer::<f32>(12).unwrap();
    let t = b.view(&[3, 4]).unwrap();
    assert_eq!((t.shape(), t.strides(), t.offset()), (&[3, 4][..], &[4, 1][..], 0));
    assert_eq!(t.to_string(), "f32[3, 4]");
    let tt = t.transpose(0, 1);
    assert_eq!((tt.shape(), tt.strides()), (&[4, 3][..], &[1, 4][..]));
    assert!(!tt.is_contiguous() && t.is_contiguous());
    assert_eq!(tt.to_string(), "f32[4, 3] strides [1, 4]");
    let n = t.narrow(1, 1, 2);
    assert_eq!((n.shape(), n.offset(), n.numel()), (&[3, 2][..], 1, 6));
    let f = t.flip(0);
    assert_eq!((f.strides(), f.offset()), (&[-4, 1][..], 8));
    assert_eq!(b.scalar(5).rank(), 0);
    assert!(b.strided(&[2, 2], &[0], 0).is_err());
    let s = b.strided(&[2, 6], &[0, 1], 3).unwrap();
    assert_eq!(s.to_string(), "f32[2, 6] strides [0, 1] offset 3");
}

#[test]
fn kernel_descriptions() {
    let rt = reference_runtime();
    let k = rt.kernel("example.axpy").unwrap();
    let params = k.params().unwrap();
    let x = params.iter().find(|p| p.name == "x").unwrap();
    assert_eq!((x.kind, x.access.as_str()), (ArgKind::Tensor, "in"));
    let y = params.iter().find(|p| p.name == "y").unwrap();
    assert_eq!(y.access, "inout");
    assert!(rt.kernels().iter().any(|k| k.name() == "gru.rollout"));
    let plugins = rt.plugins().unwrap();
    assert!(plugins.iter().any(|p| p.name == "example" && p.kernels > 0), "{:?}", plugins);
    assert!(rt.manifest_layers().unwrap().iter().any(|l| l.name == "built-in" && l.read));
}
