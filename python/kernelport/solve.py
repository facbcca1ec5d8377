# SPDX-License-Identifier: Apache-2.0
"""Residuals from expressions, their Jacobians and Levenberg-Marquardt (include/kernelport/solve.h,
docs/solve.md), NumPy arrays in and out.

    import numpy as np, kernelport as kp
    model = kp.solve.Model("b1*(1-exp(-b2*x)) - y", params="b1 b2", data="x y")
    res = kp.solve.fit(model, [500, 1e-4], np.column_stack([x, y]))   # host reference, double
    res = kp.solve.fit(model, x0, data, runtime=rt)                     # on rt's device
    res.x, res.cost, res.status, res.success, res.message

`fit` solves many independent small problems at once (x0 [B, P], data [B, M, D]: one work-group
per problem on a device); `fit_sparse` one large problem whose instances share parameters through
an index array (a mesh). With `runtime=None` both run the library's host reference in double;
with a Runtime they compile the model for its device (once per runtime, model and precision).
Options follow scipy.optimize.least_squares where the meaning is the same (loss, f_scale, ftol,
xtol, max_nfev); gtol bounds the largest |J^T r| component. Errors raise kernelport.Error
subclasses with the library's message (an InvalidArgumentError is also a ValueError); a bad
array raises ValueError naming the argument.
"""
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from . import _kernelport

# Why a problem stopped: LM_STATUS_NAMES[status] ("gradient", "step", "function",
# "max-iterations", "singular", "non-finite"); the first three are convergence.
STATUS_NAMES = _kernelport.LM_STATUS_NAMES
LOSSES = {
    "linear": _kernelport.LOSS_SQUARED,
    "huber": _kernelport.LOSS_HUBER,
    "cauchy": _kernelport.LOSS_CAUCHY,
}
PRECISIONS = {
    "auto": _kernelport.PRECISION_AUTO,
    "f64": _kernelport.PRECISION_F64,
    "f32": _kernelport.PRECISION_F32,
}
_DEFAULTS = _kernelport.LM_DEFAULTS
_CONVERGED = 2  # KP_LM_CONVERGED: gradient, step or function tolerance
_INVALID_ARG = -1  # KP_ERR_INVALID_ARG


def _names(names, what):
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    names = tuple(names)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what}: expected names (str), got {type(n).__name__}")
    return names


class Model:
    """A residual model: `expr` in the text form of docs/solve.md (each statement an output, or
    `name = ...` a local), over parameters `params` and data columns `data` (names, as a list or
    a string "b1, b2"), in the order their columns come. A malformed expression raises
    InvalidArgumentError whose message gives the line and column, what was expected and a caret.

    Model("b1*(1-exp(-b2*x)) - y", params="b1 b2", data="x y")
    """

    def __init__(self, expr, params, data=()):
        params, data = _names(params, "params"), _names(data, "data")
        if not isinstance(expr, str):
            raise TypeError(f"expr: expected the text form (str), got {type(expr).__name__}")
        self._graph = _kernelport.ExprGraph(" ".join(params), " ".join(data))
        self._graph.parse(expr)
        info = self._graph._info()
        self.expr = expr
        self.params = info["params"]
        self.data = info["data"]
        self.n_residuals = info["n_outputs"]
        self.n_nodes = info["n_nodes"]
        self.key = info["key"]
        self._host = {}

    def __repr__(self):
        return (f"<kernelport.solve.Model {self.n_residuals} residual(s) over params "
                f"{', '.join(self.params)}; data {', '.join(self.data) or '-'}>")

    def _solver(self, runtime, kind, precision):
        _check_precision(runtime, precision)
        if runtime is None:
            s = self._host.get(kind)
            if s is None:
                s = self._host[kind] = _kernelport.Solver(None, self._graph, kind, 0)
            return s
        cache = runtime.__dict__.setdefault("_solvers", {})
        key = (self.key, self.params, self.data, kind, precision)
        s = cache.get(key)
        if s is None:
            s = cache[key] = _kernelport.Solver(runtime, self._graph, kind, PRECISIONS[precision])
        return s

    def residuals(self, params, data=None, index=None, *, runtime=None, precision="auto"):
        """The residuals r [n, O] and their Jacobian J [n, O, S] (J[i, o, s] = d r[i, o] / d slot
        s) of n instances: instance i reads data[i] ([n, D]; [n] with one column) and parameter
        slot s from params[index[i, s]] (index [n, S] ints; None: params is [n, S], row i being
        instance i's). Host interpreter in double with runtime None, else the compiled kernel
        (float32 arrays for precision "f32"). A residual that is NaN or infinite raises
        VerifyError on a device, naming the instance; the host returns it as it is."""
        S, D = len(self.params), len(self.data)
        if index is None:
            p = _array(params, np.float64, "params")
            if p.ndim != 2 or p.shape[1] != S:
                raise ValueError(f"params: expected shape (n, {S}) without index, got {p.shape}")
            n = p.shape[0]
            index = np.arange(n * S, dtype=np.int32).reshape(n, S)
            p = p.reshape(-1)
        else:
            index = _index(index, S)
            n = index.shape[0]
            p = _array(params, np.float64, "params")
            if p.ndim != 1:
                raise ValueError(f"params: expected a vector (P,) with index, got shape {p.shape}")
        d = _data(data, D, n, "data")
        O = self.n_residuals
        if runtime is None:
            _check_precision(runtime, precision)
            bad = np.flatnonzero((index < 0) | (index >= p.size))
            if bad.size:
                i, s = divmod(int(bad[0]), S)
                # The message the device's check gives (kp_residual_evaluate).
                _kernelport._raise(
                    _INVALID_ARG,
                    f"index: instance {i}: parameter slot {s} ({self.params[s]}) has index "
                    f"{index[i, s]}, outside [0, {p.size})")
            r, jac = np.empty((n, O)), np.empty((n, O, S))
            self._graph._eval(n, d, np.ascontiguousarray(p[index]), r, jac)
            return r, jac
        solver = self._solver(runtime, "residual", precision)
        dt = np.float32 if solver.precision == "f32" else np.float64
        r, jac = np.empty((n, O), dt), np.empty((n, O, S), dt)
        d, p = np.ascontiguousarray(d, dt), np.ascontiguousarray(p, dt)
        solver._evaluate(n, d, index, p, r, jac)
        return r, jac

    def kernel_source(self, runtime, precision="auto"):
        """The OpenCL C generated for this model on `runtime` (kp_residual_source)."""
        return self._solver(runtime, "residual", precision).source

    def kernel(self, runtime, solver="residual", precision="auto"):
        """The kernel registered for this model on `runtime`: the residual's ("solve.r<key>_f64")
        or, with solver="lm", the batched LM's ("solve.lm<key>_f64"), a kernelport.Kernel like a
        plugin's (verify, bench, info, or a launch with its tensors)."""
        if solver not in ("residual", "lm"):
            raise ValueError(f"solver: expected 'residual' or 'lm', got {solver!r}")
        return runtime.kernel(self._solver(runtime, solver, precision).kernel)


def _check_precision(runtime, precision):
    if precision not in PRECISIONS:
        raise ValueError(f"precision: expected one of {', '.join(PRECISIONS)}, got {precision!r}")
    if runtime is None and precision == "f32":
        raise ValueError("precision: the host reference computes in double; 'f32' needs a runtime")


def _array(a, dtype, what):
    if a is None:
        raise ValueError(f"{what}: missing")
    try:
        return np.ascontiguousarray(a, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what}: not an array of numbers ({e})") from None


def _ints(a, what):
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{what}: expected integers, got {a.dtype}")
    if a.size and (a.min() < -(2**31) or a.max() >= 2**31):
        raise ValueError(f"{what}: values outside int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def _index(index, S):
    index = _ints(index, "index")
    if index.ndim != 2 or index.shape[1] != S:
        raise ValueError(f"index: expected shape (n, {S}) (one column per parameter slot), got "
                         f"{index.shape}")
    return index


def _data(data, D, n, what):
    """Data rows [n, D] as float64 (a vector for one column); None when the model has none."""
    if data is None:
        if D:
            raise ValueError(f"{what}: missing; the model reads {D} data column(s)")
        return np.empty((n, 0))
    d = _array(data, np.float64, what)
    if D == 1 and d.ndim == 1:
        d = d[:, None]
    if d.shape != (n, D):
        raise ValueError(f"{what}: expected shape ({n}, {D}), got {d.shape}")
    return d


def _lm_options(loss, f_scale, max_nfev, ftol, xtol, gtol, initial_damping, min_diagonal):
    if loss not in LOSSES:
        raise ValueError(f"loss: expected one of {', '.join(LOSSES)}, got {loss!r}")
    if max_nfev is None:
        max_nfev = _DEFAULTS["max_iterations"]
    if int(max_nfev) != max_nfev or not 1 <= max_nfev < 2**31:
        raise ValueError(f"max_nfev: expected a positive int, got {max_nfev!r}")

    def value(v, name, default):
        v = _DEFAULTS[default] if v is None else float(v)
        if not np.isfinite(v) or v < 0 or (name == "f_scale" and v == 0):
            bound = "> 0" if name == "f_scale" else ">= 0"
            raise ValueError(f"{name}: expected a finite number {bound}, got {v!r}")
        return v

    return (
        int(max_nfev),
        value(gtol, "gtol", "gradient_tolerance"),
        value(xtol, "xtol", "step_tolerance"),
        value(ftol, "ftol", "function_tolerance"),
        value(initial_damping, "initial_damping", "initial_damping"),
        value(min_diagonal, "min_diagonal", "min_diagonal"),
        LOSSES[loss],
        value(f_scale, "f_scale", "loss_scale"),
    )


@dataclass
class FitResult:
    """What fit returns: per problem the estimate x ([B, P], or [P] for one problem), cost
    (0.5 sum rho(r^2) at x), status (an index into STATUS_NAMES), success (converged: gradient,
    step or function tolerance) and nfev (Jacobian evaluations, one per trial point); message is
    the library's paragraph on the statuses ("13 of 14 converged; 1 singular (first: problem 3):
    ..."); precision "f64" or "f32"; seconds the library's phases (device: upload, solve,
    download; host: the solve)."""

    x: np.ndarray
    cost: np.ndarray
    status: np.ndarray
    success: np.ndarray
    nfev: np.ndarray
    message: str
    precision: str
    seconds: Tuple[float, ...]

    @property
    def status_names(self):
        """The statuses as names, in an array shaped like status."""
        return np.asarray(STATUS_NAMES, dtype=object)[self.status]


def fit(model, x0, data=None, *, rows=None, runtime=None, precision="auto", loss="linear",
        f_scale=None, max_nfev=None, ftol=None, xtol=None, gtol=None, initial_damping=None,
        min_diagonal=None):
    """Levenberg-Marquardt on independent problems sharing `model` (kp_lm_solve, or
    kp_lm_solve_host with runtime None), each with its own parameters (at most 32).

    x0: [P] for one problem, [B, P] for B. data: for one problem [M, D] (M instances, the model's
    data columns in order); for B problems [B, M, D], or with `rows` (B + 1 offsets: problem b owns
    rows[b] .. rows[b + 1] - 1) the rows of all of them [N, D]; the last axis may be left out when
    D is 1. loss "linear", "huber" or "cauchy" with scale f_scale (SciPy's meaning); max_nfev the
    Jacobian evaluations per problem (default 100); ftol, xtol as SciPy's; gtol stops when
    max |J^T r| <= gtol; initial_damping and min_diagonal as kp_lm_options. precision "auto"
    (f64 where the device has it), "f64" or "f32" (a runtime only). A problem that does not
    converge is a status, not an exception. Returns a FitResult."""
    P = len(model.params)
    x = _array(x0, np.float64, "x0").copy()
    single = x.ndim == 1
    if single:
        x = x[None]
    if x.ndim != 2 or x.shape[1] != P:
        raise ValueError(f"x0: expected shape ({P},) or (B, {P}) for parameters "
                         f"{', '.join(model.params)}, got {np.shape(x0)}")
    B, D = x.shape[0], len(model.data)
    if rows is None:
        if data is None:
            raise ValueError("data: missing (a model without data columns needs rows)")
        d = _array(data, np.float64, "data")
        d = d[None] if single else d
        if D == 1 and d.ndim == 2:
            d = d[..., None]
        if d.ndim != 3 or d.shape[0] != B or d.shape[2] != D:
            want = f"(M, {D})" if single else f"({B}, M, {D})"
            raise ValueError(f"data: expected shape {want} (columns {', '.join(model.data)}), got "
                             f"{np.shape(data)}")
        rows = np.arange(B + 1, dtype=np.int32) * d.shape[1]
        d = d.reshape(-1, D)
    else:
        rows = _ints(rows, "rows")
        if rows.shape != (B + 1,):
            raise ValueError(f"rows: expected {B + 1} offsets (B + 1 for x0's B = {B}), got shape "
                             f"{rows.shape}")
        # Offsets that do not rise from 0 are the library's to refuse (with its message).
        d = _data(data, D, max(int(rows[-1]), 0), "data")
    opts = _lm_options(loss, f_scale, max_nfev, ftol, xtol, gtol, initial_damping, min_diagonal)
    solver = model._solver(runtime, "lm", precision)
    cost = np.empty(B)
    nfev = np.empty(B, np.int32)
    status = np.empty(B, np.int32)
    message, seconds = solver._fit(opts, rows, d, x, cost, nfev, status)
    success = status <= _CONVERGED
    if single:
        return FitResult(x[0], float(cost[0]), int(status[0]), bool(success[0]), int(nfev[0]),
                         message, solver.precision, seconds)
    return FitResult(x, cost, status, success, nfev, message, solver.precision, seconds)


@dataclass
class SparseResult:
    """What fit_sparse returns: the estimate x [P], the cost before and after, status (an index
    into STATUS_NAMES) and its name, success, nfev (Jacobian evaluations), cg_iterations (in
    all; 0 when every step was dense), dense (every step solved by dense Cholesky), seconds
    (evaluation, normal equations, linear solves, the rest) and precision."""

    x: np.ndarray
    cost: float
    initial_cost: float
    status: int
    status_name: str
    success: bool
    nfev: int
    cg_iterations: int
    dense: bool
    seconds: Tuple[float, ...]
    precision: str


def fit_sparse(model, x0, index, data=None, *, runtime=None, precision="auto", loss="linear",
               f_scale=None, max_nfev=None, ftol=None, xtol=None, gtol=None,
               initial_damping=None, min_diagonal=None, cg_tolerance=None,
               max_cg_iterations=None, block_size=None, dense_max_parameters=None,
               progress=None):
    """Levenberg-Marquardt on one problem whose n instances share the parameters x [P] through
    `index` [n, S] (instance i's slot s is x[index[i, s]]): kp_lm_sparse_solve, or
    kp_lm_sparse_solve_host with runtime None. data [n, D] ([n] with one column; None without
    data columns). Each step solves the damped normal equations by conjugate gradients
    (cg_tolerance, default 1e-3; max_cg_iterations, default 4 sqrt(P), at least 100), Jacobi-
    or block-preconditioned (block_size consecutive parameters, 1 to 8), or, with P <=
    dense_max_parameters (default 256), by dense Cholesky. progress(SparseProgress) is called
    after each step (an exception it raises comes out once the solve has ended). The LM options
    are fit's. Returns a SparseResult."""
    x = _array(x0, np.float64, "x0").copy()
    if x.ndim != 1:
        raise ValueError(f"x0: expected a vector (P,), got shape {x.shape}")
    index = _index(index, len(model.params))
    d = _data(data, len(model.data), index.shape[0], "data")
    opts = _lm_options(loss, f_scale, max_nfev, ftol, xtol, gtol, initial_damping, min_diagonal)
    sparse = []
    for v, name in ((max_cg_iterations, "max_cg_iterations"), (block_size, "block_size"),
                    (dense_max_parameters, "dense_max_parameters")):
        v = _DEFAULTS[name] if v is None else v
        if int(v) != v or not 0 <= v < 2**31:
            raise ValueError(f"{name}: expected an int >= 0, got {v!r}")
        sparse.append(int(v))
    cg = _DEFAULTS["cg_tolerance"] if cg_tolerance is None else float(cg_tolerance)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable or None, got {type(progress).__name__}")
    solver = model._solver(runtime, "sparse", precision)
    rep = solver._fit_sparse(opts, (sparse[0], cg, sparse[1], sparse[2]), index, d, x, progress)
    st = rep["status"]
    return SparseResult(x=x, cost=rep["cost"], initial_cost=rep["initial_cost"], status=st,
                        status_name=STATUS_NAMES[st] if 0 <= st < len(STATUS_NAMES) else str(st),
                        success=0 <= st <= _CONVERGED, nfev=rep["iterations"],
                        cg_iterations=rep["cg_iterations"], dense=rep["dense"],
                        seconds=rep["seconds"], precision=solver.precision)


__all__ = ["Model", "fit", "fit_sparse", "FitResult", "SparseResult", "STATUS_NAMES", "LOSSES",
           "PRECISIONS"]
