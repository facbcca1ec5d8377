# SPDX-License-Identifier: Apache-2.0
"""The optimizer benchmarks' model as the peers build it (bench/programs/optim-model.c is
Kernelport's side): 100 tensors, their sizes, AdamW's hyperparameters, and AdamW's step in NumPy
and through torch.optim from a given state. Imported by peer-optim.py and peer-tensor.py."""

TENSORS = 100
LR, BETA1, BETA2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 1e-2


def model_sizes(total):
    """optim-model.c's rule: w_i = 1 + 37 i mod 101, floor(total w_i / sum w), the rest last."""
    w = [1 + (37 * i) % 101 for i in range(TENSORS)]
    sizes = [total * wi // sum(w) for wi in w[:-1]]
    return sizes + [total - sum(sizes)]


def case_name(total):
    return "%d tensors, %.1fM params" % (TENSORS, total / 1e6)


def numpy_adamw(np, p, g, m, v, t):
    """A function that steps p, m and v in place (AdamW, PyTorch's formulas, in float32 NumPy
    ops, t a scratch array of p's shape), counting its steps from 1."""
    state = {"step": 0}

    def step():
        state["step"] += 1
        s = state["step"]
        step_size = LR / (1 - BETA1 ** s)
        bc2_sqrt = (1 - BETA2 ** s) ** 0.5
        f = np.float32
        np.multiply(p, f(1 - LR * WD), out=p)
        np.multiply(m, f(BETA1), out=m)
        np.multiply(g, f(1 - BETA1), out=t)
        np.add(m, t, out=m)
        np.multiply(v, f(BETA2), out=v)
        np.multiply(g, g, out=t)
        np.multiply(t, f(1 - BETA2), out=t)
        np.add(v, t, out=v)
        np.sqrt(v, out=t)
        np.divide(t, f(bc2_sqrt), out=t)
        np.add(t, f(EPS), out=t)
        np.divide(m, t, out=t)
        np.multiply(t, f(step_size), out=t)
        np.subtract(p, t, out=p)

    return step


def torch_adamw(torch, params, exp_avgs, exp_avg_sqs, **kw):
    """torch.optim.AdamW over `params` (their .grad set) whose state starts from the given moments
    at step 0, so that its first step() is step 1 from that state."""
    opt = torch.optim.AdamW(params, lr=LR, betas=(BETA1, BETA2), eps=EPS, weight_decay=WD, **kw)
    for p, m, v in zip(params, exp_avgs, exp_avg_sqs):
        # fused and capturable keep the step count on the parameter's device.
        where = p.device if kw.get("fused") or kw.get("capturable") else "cpu"
        opt.state[p] = {"step": torch.zeros((), dtype=torch.float32, device=where),
                        "exp_avg": m, "exp_avg_sq": v}
    return opt
