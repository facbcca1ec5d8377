# SPDX-License-Identifier: Apache-2.0
"""blas.gemm, gru.step, logic.coeffs/forward and tensor ops against NumPy (and PyTorch CPU where
it is installed), on awkward sizes: primes and 1."""
import numpy as np
import pytest

import kernelport as kp


def close(got, want, tol=2e-5):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 13, 5), (31, 17, 37)])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True)])
def test_gemm_matches_numpy(rt, rng, m, n, k, trans_a, trans_b):
    a = rng.standard_normal((k, m) if trans_a else (m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n), dtype=np.float32)
    c0 = rng.standard_normal((m, n), dtype=np.float32)
    c = rt.buffer(c0)
    out = kp.blas.gemm(rt.buffer(a), rt.buffer(b), c, alpha=0.5, beta=2.0, trans_a=trans_a,
                       trans_b=trans_b)
    assert out is c
    want = 0.5 * (a.T if trans_a else a) @ (b.T if trans_b else b) + 2.0 * c0
    close(c.numpy(), want, tol=1e-4)


def test_gemm_on_a_transposed_view(rt, rng):
    a = rng.standard_normal((11, 3), dtype=np.float32)
    b = rng.standard_normal((11, 5), dtype=np.float32)
    c = kp.blas.gemm(rt.buffer(a).T, rt.buffer(b))
    close(c.numpy(), a.T @ b, tol=1e-4)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def gru_step_reference(x, h, w_ih, w_hh, b_ih, b_hh, linear_before_reset):
    H = h.shape[1]
    gi = x.astype(np.float64) @ w_ih.T + b_ih
    r = sigmoid(gi[:, :H] + h @ w_hh[:H].T + b_hh[:H])
    z = sigmoid(gi[:, H : 2 * H] + h @ w_hh[H : 2 * H].T + b_hh[H : 2 * H])
    if linear_before_reset:
        n = np.tanh(gi[:, 2 * H :] + r * (h @ w_hh[2 * H :].T + b_hh[2 * H :]))
    else:
        n = np.tanh(gi[:, 2 * H :] + (r * h) @ w_hh[2 * H :].T + b_hh[2 * H :])
    return (1 - z) * n + z * h


def gru_inputs(rng, B, I, H):
    s = 1 / np.sqrt(H)
    return [
        rng.standard_normal((B, I), dtype=np.float32),
        rng.standard_normal((B, H), dtype=np.float32),
        rng.uniform(-s, s, (3 * H, I)).astype(np.float32),
        rng.uniform(-s, s, (3 * H, H)).astype(np.float32),
        rng.uniform(-s, s, 3 * H).astype(np.float32),
        rng.uniform(-s, s, 3 * H).astype(np.float32),
    ]


@pytest.mark.parametrize("B,I,H", [(1, 1, 1), (3, 7, 13), (5, 17, 31)])
@pytest.mark.parametrize("linear_before_reset", [True, False])
def test_gru_step_matches_numpy(rt, rng, B, I, H, linear_before_reset):
    host = gru_inputs(rng, B, I, H)
    x, h, w_ih, w_hh, b_ih, b_hh = (rt.buffer(v) for v in host)
    h_out = kp.gru.step(x, h, w_ih, w_hh, b_ih, b_hh, linear_before_reset=linear_before_reset)
    close(h_out.numpy(), gru_step_reference(*host, linear_before_reset))


def test_gru_step_by_name_without_biases(rt, rng):
    x0, h0, wi, wh, _, _ = gru_inputs(rng, 2, 3, 5)
    h_out = rt.empty((2, 5))
    rt.kernel("gru.step")(x=rt.buffer(x0), h=rt.buffer(h0), w_ih=rt.buffer(wi),
                          w_hh=rt.buffer(wh), h_out=h_out)
    zeros = np.zeros(15, np.float32)
    close(h_out.numpy(), gru_step_reference(x0, h0, wi, wh, zeros, zeros, True))


def test_gru_step_matches_torch(rt, rng):
    torch = pytest.importorskip("torch")
    B, I, H = 3, 7, 11
    cell = torch.nn.GRUCell(I, H)
    x0 = rng.standard_normal((B, I), dtype=np.float32)
    h0 = rng.standard_normal((B, H), dtype=np.float32)
    with torch.no_grad():
        want = cell(torch.from_numpy(x0), torch.from_numpy(h0)).numpy()
        weights = [p.detach().numpy() for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                                 cell.bias_hh)]
    got = kp.gru.step(rt.buffer(x0), rt.buffer(h0), *(rt.buffer(w) for w in weights))
    close(got.numpy(), want)


def test_gru_rollout_matches_the_host_reference(rt, rng):
    """The device's rollout against the host device, which runs the plugin's C reference."""
    E, B, F, S, H, T = 2, 3, 4, 0, 5, 7
    I = F + 1 + S
    host = {
        "w_ih": rng.uniform(-0.4, 0.4, (E, 3 * H, I)),
        "w_hh": rng.uniform(-0.4, 0.4, (E, 3 * H, H)),
        "w_y": rng.uniform(-0.4, 0.4, (E, H + S)),
        "b_y": rng.uniform(-0.1, 0.1, E),
        "f": rng.standard_normal((1, B, F)),
        "y0": rng.uniform(0, 1, B),
        "h0": rng.standard_normal((E, B, H)) * 0.1,
    }
    results = []
    with kp.Runtime(device="host") as ref:
        for runtime in (rt, ref):
            args = {name: runtime.buffer(v) for name, v in host.items()}
            out = kp.gru.rollout(T=T, mode="mean", hnorm=True, **args)
            results.append([out.y.numpy(), out.h_T.numpy(), out.hnorm.numpy()])
    assert results[0][0].shape == (E, B, T)
    for got, want in zip(*results):
        close(got, want, tol=1e-4)


def logic_coeffs_reference(w, hard):
    if hard:
        p = np.eye(16)[np.argmax(w, axis=1)]
    else:
        e = np.exp(w - w.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
    # Rows 1, a, b, ab of each op's affine form (docs/kernels/logic.md, "Semantics").
    m = np.array(
        [
            [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
            [0, 0, 1, 1, 0, 0, 1, 1, -1, -1, 0, 0, -1, -1, 0, 0],
            [0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1, 0, 0, 0, 0],
            [0, 1, -1, 0, -1, 0, -2, -1, 1, 2, 0, 1, 0, 1, -1, 0],
        ]
    )
    return p @ m.T


@pytest.mark.parametrize("G,IN,N", [(1, 1, 1), (13, 7, 37), (67, 19, 129)])
@pytest.mark.parametrize("hard", [False, True])
def test_logic_forward_matches_numpy(rt, rng, G, IN, N, hard):
    w = rng.standard_normal((G, 16), dtype=np.float32)
    x = rng.uniform(0, 1, (IN, N)).astype(np.float32)
    a_idx = rng.integers(0, IN, G, dtype=np.int32)
    b_idx = rng.integers(0, IN, G, dtype=np.int32)
    C = kp.logic.coeffs(rt.buffer(w), hard=hard)
    Cw = logic_coeffs_reference(w.astype(np.float64), hard)
    close(C.numpy(), Cw)
    y = kp.logic.forward(rt.buffer(x), rt.buffer(a_idx), rt.buffer(b_idx), C)
    a, b = x[a_idx].astype(np.float64), x[b_idx].astype(np.float64)
    want = Cw[:, :1] + Cw[:, 1:2] * a + Cw[:, 2:3] * b + Cw[:, 3:4] * a * b
    close(y.numpy(), want)


def test_tensor_ops_match_numpy(rt, rng):
    a = rng.standard_normal((7, 1, 5), dtype=np.float32)
    b = rng.standard_normal((3, 5), dtype=np.float32)
    A, B = rt.buffer(a), rt.buffer(b)
    close(kp.tensor.add(A, B).numpy(), a + b)
    close(kp.tensor.mul(A, B).numpy(), a * b)
    close(kp.tensor.exp(B).numpy(), np.exp(b))
    close(kp.tensor.relu(B).numpy(), np.maximum(b, 0))
    close(kp.tensor.sum(A, axes=2).numpy(), a.sum(axis=2))
    close(kp.tensor.mean(B, axes=0, keepdims=True).numpy(), b.mean(axis=0, keepdims=True))
    close(kp.tensor.max(B).numpy(), b.max())
    e = np.exp(b - b.max(axis=1, keepdims=True))
    close(kp.tensor.softmax(B).numpy(), e / e.sum(axis=1, keepdims=True))
    kp.tensor.fill(B, 2.5)
    np.testing.assert_array_equal(B.numpy(), np.full((3, 5), 2.5, np.float32))


def test_prepared_launch_rebinds(rt):
    n = 17
    k = rt.kernel("example.axpy")
    x = rt.buffer(np.arange(n, dtype=np.float32))
    y = rt.zeros(n)
    p = k.prepare(n=n, alpha=2.0, x=x, y=y)
    p()
    p.set(alpha=-1.0)
    p()
    np.testing.assert_array_equal(y.numpy(), np.arange(n, dtype=np.float32))


def test_verify_and_bench_results(rt):
    k = rt.kernel("example.axpy")
    results = k.verify(size="prime")
    assert results and all(isinstance(r, kp.VerifyResult) for r in results)
    assert all(r.passed and r.failures == 0 and r.kernel == "example.axpy" for r in results)
    bench = k.bench(size="prime", warmup=1, min_runs=3, max_runs=3, min_seconds=0)
    assert isinstance(bench, kp.BenchResult) and bench.runs == 3
    assert bench.min_s <= bench.median_s <= bench.max_s


def test_info_describes_the_parameters(rt):
    info = rt.kernel("gru.step").info()
    assert isinstance(info, kp.KernelInfo) and info.name == "gru.step"
    params = {p.name: p for p in info.params}
    assert params["x"].kind == "tensor" and params["x"].dtypes == ["f32"]
    assert params["h_out"].access == "out"
    assert params["linear_before_reset"].optional and params["linear_before_reset"].default == 1
    assert rt.kernel("gru.step").params == tuple(params)
