# SPDX-License-Identifier: Apache-2.0
"""The library's reports as Python objects: the extension builds these from its structs."""
from dataclasses import dataclass
from typing import List, Optional


@dataclass(frozen=True)
class ParamInfo:
    """A kernel parameter (kp_param_info): kind "tensor", "int" or "float"; access "in", "out" or
    "inout"; the dtypes a tensor accepts; default is None for required parameters and tensors."""

    name: str
    doc: str
    kind: str
    access: str
    dtypes: List[str]
    optional: bool
    default: Optional[float]


@dataclass(frozen=True)
class KernelInfo:
    """A kernel's description (kp_kernel_info) with its parameters."""

    name: str
    summary: str
    plugin: str
    plugin_path: str
    source_name: Optional[str]
    params: List[ParamInfo]
    n_tunables: int


@dataclass(frozen=True)
class Tunable:
    """A tunable as resolved for the runtime's device (kp_tuning_info): its value, where it came
    from ("default" or the manifest entry), the allowed values and the rejected candidates."""

    name: str
    doc: str
    value: int
    default: int
    value_text: str
    origin: str
    allowed: str
    notes: str
    provenance: str  # the manifest entry's provenance, "" when none


@dataclass(frozen=True)
class VerifyResult:
    """One output compared between the device and the host reference (kp_verify_result)."""

    kernel: str
    size: str
    output: str
    elements: int
    max_abs_err: float
    max_rel_err: float
    atol: float
    rtol: float
    worst_index: int
    failures: int
    passed: bool


@dataclass(frozen=True)
class BenchResult:
    """Timings of a kernel on its sample arguments (kp_bench_result), seconds per launch."""

    kernel: str
    size: str
    runs: int
    median_s: float
    min_s: float
    max_s: float
    p10_s: float
    p90_s: float
    flops: float
    bytes: float
    gflops: float
    gbs: float


@dataclass(frozen=True)
class DeviceInfo:
    """A device (kp_device_info); `why` says which rule chose the runtime's device."""

    index: int
    name: str
    vendor: str
    type: str
    vendor_string: str
    platform: str
    driver: str
    version: str
    c_version: str
    arch: str
    pci_bus: str
    uuid: str
    compute_units: int
    clock_mhz: int
    global_mem: int
    local_mem: int
    max_alloc: int
    max_workgroup: int
    fp16: bool
    fp64: bool
    why: str = ""


@dataclass(frozen=True)
class PluginRecord:
    """A loaded or rejected plugin (kp_plugin_record); `reason` says why it was rejected, `probe`
    how a loaded one was vetted."""

    path: str
    name: str
    version: str
    reason: str
    n_kernels: int
    probe: str = ""


@dataclass(frozen=True)
class ManifestLayer:
    """A manifest file the runtime read or looked for (kp_manifest_layer)."""

    name: str
    path: str
    read: bool


@dataclass(frozen=True)
class SparseProgress:
    """One step of kernelport.solve.fit_sparse (kp_lm_sparse_progress), passed to its `progress`
    callable: the Jacobian evaluations so far, this step's CG iterations (0 for a dense step), the
    cost at the current point (after the step when it was accepted), the damping, and where the
    step's linear solve stopped (|(J^T J + mu D) h + J^T r| / |J^T r|)."""

    iteration: int
    cg_iterations: int
    cost: float
    damping: float
    accepted: bool
    gradient_max: float
    cg_residual: float
    dense: bool


__all__ = [
    "ParamInfo",
    "KernelInfo",
    "Tunable",
    "VerifyResult",
    "BenchResult",
    "DeviceInfo",
    "PluginRecord",
    "ManifestLayer",
    "SparseProgress",
]
