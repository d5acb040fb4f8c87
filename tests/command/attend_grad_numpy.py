#!/usr/bin/python3
"""attend_grad_numpy.py — the gradients of `linattn attend --grad-out dO.npy --grad-q …
--grad-k … --grad-v …` against an independent float64 NumPy backward, and their refusals.

Usage: /usr/bin/python3 tests/command/attend_grad_numpy.py BUILD/linattn   (make test)

Part 0 checks the NumPy backward itself against central finite differences of the forward
references of attend_numpy.py (float64), so the reference below cannot be wrong quietly.
Part 1 runs every variant (softmax with both kernels, hard, local, linear with both feature
maps and both causal forms, Taylor, FAVOR+ in both causal forms) × causal × key lengths ×
precision over inputs of shape (N, d),
(H, N, d) and (B, H, N, d), with M != N and d_v != d_k, and requires the output and
‖g − ref‖ / ‖ref‖ < 1e-5 in float32 and < 1e-11 in float64 for each of dQ, dK, dV
(linear attention's, Taylor's and FAVOR+'s dQ and dK: relative to the size of the terms
they sum, see linear_dq_error and term_error).
A kernel the library has no backward for (attend refuses it: "kernel X has no backward
pass") is reported once as "SKIPPED X: no backward" and does not fail, but the
refusal itself must be clean (exit 2, one line, no file written).
Part 2 feeds bad gradient flags and files: each must exit 2 with exactly one stderr line
naming the fault, and leave no output file (Y nor gradient) and no temporary behind.

The backward formulas, for L = Σ out ∘ dO:
  softmax  P = softmax(Q Kᵀ · scale) over the visible keys, O = P V, dP = dO Vᵀ,
           dS = P ∘ (dP − rowsum(dO ∘ O)), dQ = dS K · scale, dK = dSᵀ Q · scale, dV = Pᵀ dO
  hard     dQ = dK = 0; dV[j] = Σ of dO_i over the queries i whose argmax is j
  linear   A = (φ(Q) φ(K)ᵀ) ∘ mask, den = A·1 + eps, O = A V / den;
           dnum = dO / den, dden = −rowsum(dO ∘ O) / den, dA = (dnum Vᵀ + dden) ∘ mask,
           dφ(Q) = dA φ(K), dφ(K) = dAᵀ φ(Q), dV = Aᵀ dnum, dQ = dφ(Q) ∘ φ′(Q), dK likewise
           (φ′ of elu+1: 1 for x >= 0, eˣ below; of relu: 1 for x > 0); a query that sees
           no key has a zero output and passes no gradient.
  local    softmax's over the keys within the window
  taylor   linear's with A = 1 + S + S²/2 (S = Q Kᵀ · scale): dS = dA ∘ (1 + S) · scale
  favor    linear's with A_ij = Σ_l π_ijl, W fixed, through exp, the rows' maxima and the
           keys' stabilizer μ_i (grad_favor).

Inputs are random with a printed seed; LA_TEST_SEED=N replays a run. Exits 1 on any
failure; the last line is "attend_grad_numpy: N passed, N failed, N skipped".
"""
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attend_numpy import (DEFAULT_EPS, Run, causal_offset, favor_features,  # noqa: E402
                          key_mask, phi, ref_favor, ref_hard, ref_linear, ref_local,
                          ref_softmax, ref_taylor, rel_error, to_heads, visible_keys)
import checks  # noqa: E402  (tests/command/checks.py)

TOL = {"float32": 1e-5, "float64": 1e-11}
NO_BACKWARD = "has no backward pass"


# ---------------------------------------------------------------- the NumPy backward


def window_mask(n, m, causal, window):
    """(N, M) boolean: |position_i − j| <= window, query i at position i (+ M − N causal
    bottom-right), local attention's window."""
    position = np.arange(n) + causal_offset(n, m, causal)
    return np.abs(position[:, None] - np.arange(m)[None, :]) <= window


def grad_softmax(q, k, v, d_out, scale, causal, lengths, window=None):
    """(dQ, dK, dV) of Σ softmax(q kᵀ · scale) v ∘ d_out; all (B, H, ·, ·) float64; window:
    local attention's, the keys within it only."""
    b, _, n, _ = q.shape
    m = k.shape[2]
    mask = key_mask(n, m, causal, lengths, b)
    if window is not None:
        mask = mask & window_mask(n, m, causal, window)[None, None]
    scores = np.where(mask, np.einsum("bhnd,bhmd->bhnm", q, k) * scale, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.where(mask, np.exp(scores - row_max), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    P = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    O = P @ v
    dP = d_out @ np.swapaxes(v, -1, -2)
    D = np.sum(d_out * O, axis=-1, keepdims=True)
    dS = P * (dP - D)
    dq = dS @ k * scale
    dk = np.swapaxes(dS, -1, -2) @ q * scale
    dv = np.swapaxes(P, -1, -2) @ d_out
    return dq, dk, dv


def grad_hard(q, k, v, d_out, scale, causal, lengths):
    """dQ = dK = 0; dV scatters d_out to each query's argmax key (ties: the lowest)."""
    b, h, n, _ = q.shape
    m = k.shape[2]
    mask = np.broadcast_to(key_mask(n, m, causal, lengths, b), (b, h, n, m))
    scores = np.where(mask, np.einsum("bhnd,bhmd->bhnm", q, k) * scale, -np.inf)
    best = scores.argmax(axis=-1)
    seen = mask.any(axis=-1)
    dv = np.zeros_like(v)
    for i in range(b):
        for j in range(h):
            np.add.at(dv[i, j], best[i, j][seen[i, j]], d_out[i, j][seen[i, j]])
    return np.zeros_like(q), np.zeros_like(k), dv


def phi_prime(x, feature_map):
    if feature_map == "relu":
        return (x > 0).astype(np.float64)
    return np.where(x >= 0, 1.0, np.exp(np.minimum(x, 0.0)))


def grad_linear(q, k, v, d_out, feature_map, eps, causal, lengths):
    """(dQ, dK, dV) of Σ linear_attention(q, k, v) ∘ d_out, through the masked N×M matrix
    A = φ(Q) φ(K)ᵀ (the same function as the prefix sums of S and z)."""
    b, _, n, _ = q.shape
    m = k.shape[2]
    mask = key_mask(n, m, causal, lengths, b).astype(np.float64)
    seen = (visible_keys(n, m, causal, lengths, b) > 0)[:, None, :, None]  # (B, 1, N, 1)
    fq, fk = phi(q, feature_map), phi(k, feature_map)
    A = np.einsum("bhnd,bhmd->bhnm", fq, fk) * mask
    den = np.where(seen, A.sum(axis=-1, keepdims=True) + eps, 1.0)
    O = np.where(seen, (A @ v) / den, 0.0)
    g = np.where(seen, d_out, 0.0)
    dnum = g / den
    dden = -np.sum(g * O, axis=-1, keepdims=True) / den
    dA = (dnum @ np.swapaxes(v, -1, -2) + dden) * mask
    dfq = dA @ fk
    dfk = np.swapaxes(dA, -1, -2) @ fq
    dv = np.swapaxes(A, -1, -2) @ dnum
    return dfq * phi_prime(q, feature_map), dfk * phi_prime(k, feature_map), dv


def grad_weighted(A, v, d_out, mask, eps):
    """The part every normalized-weights backward shares, y = A v / (A·1 + eps) with A
    (B, H, N, M) the weights (0 where hidden): (dA, dV, the terms' sizes |dnum Vᵀ| + |dden|),
    dA = (dnum Vᵀ + dden) ∘ mask, dnum = dO / den, dden = −rowsum(dO ∘ y) / den; a query
    that sees no key passes no gradient."""
    seen = mask.any(axis=-1, keepdims=True)
    den = np.where(seen, A.sum(axis=-1, keepdims=True) + eps, 1.0)
    O = np.where(seen, (A @ v) / den, 0.0)
    g = np.where(seen, d_out, 0.0)
    dnum = g / den
    dden = -np.sum(g * O, axis=-1, keepdims=True) / den
    dA = (dnum @ np.swapaxes(v, -1, -2) + dden) * mask
    terms = (np.abs(dnum @ np.swapaxes(v, -1, -2)) + np.abs(dden)) * mask
    return dA, np.swapaxes(A, -1, -2) @ dnum, terms


def grad_taylor(q, k, v, d_out, scale, eps, causal, lengths):
    """(dQ, dK, dV, size_q, size_k) of Taylor attention, κ = 1 + s + s²/2 with s = q·k ·
    scale: dκ from grad_weighted, dS = dκ ∘ (1 + s) · scale, dQ = dS K, dK = dSᵀ Q; sizes:
    what the terms of dQ and dK add up to in absolute value."""
    b, _, n, _ = q.shape
    mask = np.broadcast_to(key_mask(n, k.shape[2], causal, lengths, b),
                           q.shape[:2] + (n, k.shape[2]))
    s = np.einsum("bhnd,bhmd->bhnm", q, k) * scale
    kappa = np.where(mask, 1 + s + s * s / 2, 0.0)
    dkappa, dv, terms = grad_weighted(kappa, v, d_out, mask, eps)
    dS = dkappa * (1 + s) * scale
    size = terms * np.abs(1 + s) * abs(scale)
    return (dS @ k, np.swapaxes(dS, -1, -2) @ q, dv, size @ np.abs(k),
            np.swapaxes(size, -1, -2) @ np.abs(q))


def grad_favor(q, k, v, d_out, w, eps, causal, lengths):
    """(dQ, dK, dV, size_q, size_k) of FAVOR+ with W fixed, the stabilizers as ref_favor's
    (the function the kernel computes): with p = s·x Wᵀ, P its row max, g_j = P_j −
    ‖s·k_j‖²/2, μ_i = g_{j*(i)} the largest g query i sees (the first), the terms
    π_ijl = exp(p_il − P_i + p_jl − P_j + g_j − μ_i) / m of a_ij = Σ_l π_ijl:
      dp_il = Σ_j dA_ij π_ijl, dp_jl = Σ_i dA_ij π_ijl, dP_i = dμ_i = −Σ_j dA_ij a_ij,
      dg_{j*(i)} += dμ_i, the key's ‖x_j‖²/2: −Σ_i dA_ij a_ij − dg_j times x_j,
      dP_j = dg_j, then each row's dP onto its argmax; dQ = s·dp_q W, dK = s·(dp_k W + c_j x_j)."""
    b, h, n, dk = q.shape
    mk, m = k.shape[2], w.shape[0]
    s = dk ** -0.25
    mask = np.broadcast_to(key_mask(n, mk, causal, lengths, b), (b, h, n, mk))
    pq, pk = np.einsum("bhnd,ld->bhnl", s * q, w), np.einsum("bhmd,ld->bhml", s * k, w)
    Pq, Pk = pq.max(axis=-1), pk.max(axis=-1)
    g = Pk - 0.5 * np.sum((s * k) ** 2, axis=-1)
    gm = np.where(mask, g[:, :, None, :], -np.inf)
    star = gm.argmax(axis=-1)  # (B, H, N): j*(i), the first of the largest
    mu = np.where(mask.any(axis=-1), gm.max(axis=-1), 0.0)
    expo = (pq - Pq[..., None])[:, :, :, None, :] + (pk - Pk[..., None] + g[..., None])[
        :, :, None, :, :] - mu[..., None, None]
    pi = np.where(mask[..., None], np.exp(expo) / m, 0.0)  # (B, H, N, M, m)
    a = pi.sum(axis=-1)
    dA, dv, terms = grad_weighted(a, v, d_out, mask, eps)
    dpq = np.einsum("bhnj,bhnjl->bhnl", dA, pi)
    dpk = np.einsum("bhnj,bhnjl->bhjl", dA, pi)
    dmu = -np.sum(dA * a, axis=-1)  # (B, H, N): dP_i too
    coef = -np.sum(dA * a, axis=-2)  # (B, H, M): on x_j
    dg = np.zeros_like(g)
    for bi in range(b):
        for hi in range(h):
            np.add.at(dg[bi, hi], star[bi, hi], dmu[bi, hi])
    coef -= dg
    np.put_along_axis(dpq, pq.argmax(axis=-1)[..., None],
                      np.take_along_axis(dpq, pq.argmax(axis=-1)[..., None], -1) + dmu[..., None],
                      axis=-1)
    np.put_along_axis(dpk, pk.argmax(axis=-1)[..., None],
                      np.take_along_axis(dpk, pk.argmax(axis=-1)[..., None], -1) + dg[..., None],
                      axis=-1)
    dq = s * (dpq @ w)
    dkk = s * (dpk @ w + coef[..., None] * (s * k))
    wmax = np.abs(w).max(axis=0)  # (d_k,)
    size = terms * a
    size_q = 2 * s * size.sum(axis=-1)[..., None] * wmax
    size_k = s * np.swapaxes(size, -1, -2).sum(axis=-1)[..., None] * (2 * wmax + s * np.abs(k))
    return dq, dkk, dv, size_q, size_k


def term_error(got, ref, size):
    """‖got − ref‖ / ‖size‖, size what the gradient's terms add up to in absolute value
    (0 where no query sees a key: then any nonzero is inf)."""
    ref = ref.reshape(got.shape)
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(ref))):
        return np.inf
    scale = np.linalg.norm(size)
    diff = np.linalg.norm(got - ref)
    return diff / scale if scale > 0 else (0.0 if diff == 0 else np.inf)


def linear_dq_error(got, ref, used, opts, wrt="q"):
    """The error of linear attention's dQ (wrt "q"; dK with "k", the same argument with
    dφ(k_j) = Σ_i φ(q_i) (dO_i·v_j / den_i + dden_i) over the queries that see j),
    ‖g − ref‖ / ‖size‖, where size is what the terms
    of dφ(q_i) = Σ_j φ(k_j) (dO_i·v_j / den_i + dden_i) add up to in absolute value
    (times |φ′(q_i)|), elementwise: the scale of a sum's rounding. dQ cancels where the
    output barely depends on q: a query that sees one key (out_i = v_j · A/(A + eps); the
    causal mask's first query always does), or with relu a φ(q_i) with one nonzero entry
    (out_i does not depend on its size): there the true dQ is ~eps and any kernel computes
    it to rounding times the terms, which ‖ref‖ does not measure (float32 errors of 1e-4
    of ‖dQ‖ were seen). Elsewhere ‖size‖ is a few times ‖ref‖."""
    q, k, v, d_out = used["q"], used["k"], used["v"], used["do"]
    b, _, n, _ = q.shape
    m = k.shape[2]
    mask = key_mask(n, m, opts["causal"], opts["lengths"], b).astype(np.float64)
    seen = (visible_keys(n, m, opts["causal"], opts["lengths"], b) > 0)[:, None, :, None]
    fq, fk = phi(q, opts["fm"]), phi(k, opts["fm"])
    A = np.einsum("bhnd,bhmd->bhnm", fq, fk) * mask
    den = np.where(seen, A.sum(axis=-1, keepdims=True) + opts["eps"], 1.0)
    O = np.where(seen, (A @ v) / den, 0.0)
    g = np.where(seen, d_out, 0.0)
    dden = np.sum(g * O, axis=-1, keepdims=True) / den
    terms = (np.abs(g @ np.swapaxes(v, -1, -2)) / den + np.abs(dden)) * mask
    if wrt == "q":
        size = (terms @ fk) * np.abs(phi_prime(q, opts["fm"]))
    else:
        size = (np.swapaxes(terms, -1, -2) @ fq) * np.abs(phi_prime(k, opts["fm"]))
    ref = ref.reshape(got.shape)
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(ref))):
        return np.inf
    diff, scale = np.linalg.norm(got - ref), np.linalg.norm(size)
    return diff / scale if scale > 0 else diff


def reference(variant, q, k, v, d_out, opts):
    """(out, dQ, dK, dV) in float64 for (B, H, ·, ·) inputs; Taylor and FAVOR+ also the sizes
    of dQ's and dK's terms (their errors are taken relative to those: term_error)."""
    causal, lengths = opts["causal"], opts["lengths"]
    if variant == "local":
        out = ref_local(q, k, v, opts["scale"], causal, lengths, opts["window"])
        return (out,) + grad_softmax(q, k, v, d_out, opts["scale"], causal, lengths,
                                     opts["window"])
    if variant == "taylor":
        out = ref_taylor(q, k, v, opts["scale"], opts["eps"], causal, lengths)
        return (out,) + grad_taylor(q, k, v, d_out, opts["scale"], opts["eps"], causal, lengths)
    if variant == "favor":
        out = ref_favor(q, k, v, opts["w"], opts["eps"], causal, lengths)
        return (out,) + grad_favor(q, k, v, d_out, opts["w"], opts["eps"], causal, lengths)
    if variant == "softmax":
        out = ref_softmax(q, k, v, opts["scale"], causal, lengths)
        return (out,) + grad_softmax(q, k, v, d_out, opts["scale"], causal, lengths)
    if variant == "hard":
        out = ref_hard(q, k, v, opts["scale"], causal, lengths)
        return (out,) + grad_hard(q, k, v, d_out, opts["scale"], causal, lengths)
    out = ref_linear(q, k, v, opts["fm"], opts["eps"], causal, lengths)
    return (out,) + grad_linear(q, k, v, d_out, opts["fm"], opts["eps"], causal, lengths)


# ---------------------------------------------------------------- part 0: finite differences


def kink_gap(variant, q, k, opts):
    """How far (in logits or projections) q and k lie from the nearest kink of L, where
    its gradient jumps and central differences across it are off by a share of the jump:
    hard's argmax changing hands (the gap between a query's two largest scores), relu's
    zero (the smallest |q|, |k|), FAVOR+'s stabilizers (the gap between the two largest
    projections of a query's or of its leading key's row, and between the two largest g
    over the keys a query sees: ref_favor). inf for the smooth variants. A step of 1e-6
    in one input moves these by a few 1e-6 at most on the draws below."""
    lengths, causal = opts["lengths"], opts["causal"]
    b, _, n, dk = q.shape
    m = k.shape[2]
    seen = visible_keys(n, m, causal, lengths, b)  # (B, N)

    def top_two_gap(x):
        if x.shape[-1] < 2:
            return np.inf
        top = np.sort(x, axis=-1)
        return float(np.min(top[..., -1] - top[..., -2]))

    gaps = [np.inf]
    if variant == "linear" and opts.get("fm") == "relu":
        gaps += [float(np.min(np.abs(q))), float(np.min(np.abs(k)))]
    elif variant in ("hard", "favor"):
        s = dk ** -0.25
        pq = np.einsum("bhnd,ld->bhnl", s * q, opts["w"]) if variant == "favor" else None
        pk = np.einsum("bhmd,ld->bhml", s * k, opts["w"]) if variant == "favor" else None
        if variant == "favor":
            gaps.append(top_two_gap(pq))
            g = pk.max(axis=-1) - 0.5 * np.sum((s * k) ** 2, axis=-1)  # (B, H, M)
        else:
            scores = np.einsum("bhnd,bhmd->bhnm", q, k) * opts["scale"]
        for bi in range(b):
            for i in range(n):
                c = int(seen[bi, i])
                if c == 0:
                    continue
                if variant == "hard":
                    gaps.append(top_two_gap(scores[bi, :, i, :c]))
                else:
                    gaps.append(top_two_gap(g[bi, :, :c]))
                    lead = np.argmax(g[bi, :, :c], axis=-1)  # (H,)
                    gaps.append(top_two_gap(pk[bi, np.arange(pk.shape[1]), lead]))
    return min(gaps)


def finite_differences(run):
    """The NumPy backward against central differences of L = Σ forward ∘ dO, forward being
    attend_numpy's references (float64, h = 1e-6), on inputs drawn again until no kink of
    L lies within 1e-3 of them (kink_gap), hundreds of times the reach of a step, so no
    difference straddles one. Across a kink a central difference is off by a share of the
    jump in the gradient: 0.15 to 1 relative where 1e-6 is allowed (a relu input at 3e-7,
    two hard scores 2e-8 apart, two FAVOR+ projections 5e-7 apart). Over 4,000 draws in
    NumPy, P(kink_gap < t) per run is about 200·t (relu), 100·t (hard) and 50·t (FAVOR+),
    so without the redraw about one run in 4,000 straddled one; with it a draw is redone
    about once in 10 (relu), 20 (hard) and 30 (FAVOR+)."""
    rng = run.rng
    configs = [("softmax", dict(scale=0.4)), ("hard", dict(scale=0.125)),
               ("linear", dict(fm="elu", eps=1e-3)), ("linear", dict(fm="relu", eps=0.5)),
               ("local", dict(scale=0.4, window=1)), ("taylor", dict(scale=0.4, eps=1e-3)),
               ("favor", dict(w=favor_features(5, 3, 11), eps=0.5))]
    for variant, extra in configs:
        for causal in (False, True):
            b, h, n, m, dk, dv = 2, 2, 5, 6, 3, 4
            opts = dict(extra, causal=causal, lengths=np.array([0, 4]))
            for _ in range(100):
                q, k = rng.standard_normal((b, h, n, dk)), rng.standard_normal((b, h, m, dk))
                if kink_gap(variant, q, k, opts) >= 1e-3:
                    break
            v, d_out = rng.standard_normal((b, h, m, dv)), rng.standard_normal((b, h, n, dv))
            grads = reference(variant, q, k, v, d_out, opts)[1:4]
            step = 1e-6
            worst = 0.0
            for which, x in enumerate((q, k, v)):
                fd = np.zeros_like(x)
                for idx in np.ndindex(*x.shape):
                    keep = x[idx]
                    x[idx] = keep + step
                    up = np.sum(reference(variant, q, k, v, d_out, opts)[0] * d_out)
                    x[idx] = keep - step
                    down = np.sum(reference(variant, q, k, v, d_out, opts)[0] * d_out)
                    x[idx] = keep
                    fd[idx] = (up - down) / (2 * step)
                worst = max(worst, rel_error(grads[which], fd))
            label = "finite differences %s %s causal=%d" % (
                variant, {x: extra[x] for x in extra if x != "w"}, causal)
            if worst < 1e-6:
                run.ok(label)
            else:
                run.fail(label, "NumPy backward vs central differences: relative error %.3g"
                         % worst)


# ---------------------------------------------------------------- part 1: the command


OUTPUTS = ("y.npy", "dq.npy", "dk.npy", "dv.npy")


def clear_outputs(run):
    for name in OUTPUTS:
        if os.path.exists(run.path(name)):
            os.remove(run.path(name))


def attend_grad(run, args):
    """args + the four gradient flags (dO at do.npy)."""
    return run.attend(args + ["--out", run.path("y.npy"), "--grad-out", run.path("do.npy"),
                              "--grad-q", run.path("dq.npy"), "--grad-k", run.path("dk.npy"),
                              "--grad-v", run.path("dv.npy")])


def skipped(run, err, rc):
    """Whether attend refused for want of a backward: then the refusal must be clean, and
    the kernel is reported once as skipped."""
    lines = err.splitlines()
    if rc != 2 or len(lines) != 1 or NO_BACKWARD not in lines[0]:
        return False
    kernel = lines[0].split("kernel ", 1)[1].split(" ", 1)[0]
    if kernel not in run.skipped_kernels:
        run.skipped_kernels.add(kernel)
        print("SKIPPED %s: no backward" % kernel)
    run.skipped += 1
    left = [name for name in os.listdir(run.dir) if name in OUTPUTS or ".tmp." in name]
    if left:
        run.fail("refusal of %s" % kernel, "files written: %s" % left)
    return True


def gradient_case(run, label, variant, shape, causal, with_lengths, precision, *,
                  feature_map=None, kernel=None, chunk=None, scale=None, eps=None,
                  window=None, features=None):
    """One `linattn attend` call with gradients against the NumPy backward.
    shape = (lead, n, m, d_k, d_v)."""
    lead, n, m, dk, dv = shape
    rng = run.rng
    batch = lead[0] if len(lead) == 2 else 1
    arrays = {"q": rng.standard_normal(lead + (n, dk)), "k": rng.standard_normal(lead + (m, dk)),
              "v": rng.standard_normal(lead + (m, dv)),
              "do": rng.standard_normal(lead + (n, dv))}
    if variant == "hard":
        # multiples of 1/8 and scale 1/8: every score is exact, so is the argmax (ties too)
        for name in "qkv":
            arrays[name] = np.round(arrays[name] * 8) / 8
    used = {}
    for name, x in arrays.items():
        stored = x.astype(rng.choice(["float32", "float64"]))
        np.save(run.path(name + ".npy"), stored)
        used[name] = to_heads(stored.astype(precision).astype(np.float64))
    # the registry's name of the kernel (--kernel is deprecated)
    name = {("softmax", "materialized"): "softmax_materialized",
            ("linear", "recurrent"): "linear_recurrent",
            ("favor", "recurrent"): "favor_recurrent"}.get((variant, kernel), variant)
    args = ["--variant", name, "--q", run.path("q.npy"), "--k", run.path("k.npy"),
            "--v", run.path("v.npy"), "--precision", precision]
    lengths = None
    if with_lengths:
        # never 1: with one visible key the output is v_j itself (softmax), or v_j up to
        # eps (linear), so dQ is zero or ~eps: an ill-conditioned difference of O(1) terms
        # no float32 kernel computes to 1e-5 relative (the library's own tests cover it)
        lengths = rng.choice([0] + list(range(2, m + 1)), size=batch)
        lengths[0] = 0 if batch > 1 else lengths[0]
        if batch > 1:
            lengths[-1] = m
        np.save(run.path("lengths.npy"), lengths.astype(rng.choice(["int32", "int64"])))
        args += ["--key-lengths", run.path("lengths.npy")]
    if causal:
        args.append("--causal")
    if chunk:
        args += ["--chunk", str(chunk)]
    if variant == "hard":
        scale = 0.125
    if scale is not None:
        args += ["--scale", repr(scale)]
    if eps is not None:
        args += ["--eps", repr(eps)]
    if feature_map:
        args += ["--feature-map", feature_map]
    if window is not None:
        args += ["--window", str(window)]
    if features is not None:
        args += ["--features", str(features), "--seed", "5"]
    opts = dict(causal=causal, lengths=lengths,
                scale=scale if scale is not None else 1 / np.sqrt(dk),
                fm=feature_map or "elu", eps=DEFAULT_EPS if eps is None else eps,
                window=window, w=favor_features(features, dk, 5) if features else None)
    refs = reference(variant, used["q"], used["k"], used["v"], used["do"], opts)
    want_shapes = (lead + (n, dv), lead + (n, dk), lead + (m, dk), lead + (m, dv))

    clear_outputs(run)
    rc, _, err = attend_grad(run, args)
    if skipped(run, err, rc):
        return
    if rc != 0:
        return run.fail(label, "exit %d: %s" % (rc, err.strip()))
    for name, ref, want in zip(OUTPUTS, refs, want_shapes):
        got = np.load(run.path(name))
        if got.dtype != np.dtype(precision) or got.shape != want:
            return run.fail(label, "%s is %s %s, want %s %s" % (name, got.dtype, got.shape,
                                                               precision, want))
        ref = ref.reshape(want)
        if variant == "linear" and name in ("dq.npy", "dk.npy"):
            e = linear_dq_error(got.astype(np.float64), ref, used, opts, name[1])
        elif variant in ("taylor", "favor") and name in ("dq.npy", "dk.npy"):
            e = term_error(got.astype(np.float64), ref, refs[4 if name == "dq.npy" else 5])
        else:
            e = rel_error(got.astype(np.float64), ref)
        if not e < TOL[precision]:
            worst = np.unravel_index(np.argmax(np.abs(got - ref)), ref.shape)
            return run.fail(label, "%s: relative error %.3g >= %g (worst at %s: %r vs %r)" % (
                name, e, TOL[precision], worst, got[worst], ref[worst]))
    run.ok(label)


def gradients(run):
    # (leading dims, N, M, d_k, d_v): M != N, d_v != d_k
    shapes = [((), 7, 11, 5, 3), ((2,), 9, 6, 4, 6), ((3, 2), 10, 13, 8, 5)]
    for shape in shapes:
        for causal in (False, True):
            for with_lengths in (False, True):
                for precision in ("float32", "float64"):
                    tag = "%s causal=%d lengths=%d %s" % (
                        "x".join(map(str, shape[0] + (shape[1], shape[3]))), causal,
                        with_lengths, precision)
                    common = (shape, causal, with_lengths, precision)
                    gradient_case(run, "softmax " + tag, "softmax", *common)
                    gradient_case(run, "softmax materialized scale=0.3 " + tag, "softmax",
                                  *common, kernel="materialized", scale=0.3)
                    gradient_case(run, "hard " + tag, "hard", *common)
                    for fm in ("elu", "relu"):
                        gradient_case(run, "linear %s %s" % (fm, tag), "linear", *common,
                                      feature_map=fm)
                    gradient_case(run, "local window=2 " + tag, "local", *common, window=2)
                    gradient_case(run, "taylor scale=0.3 " + tag, "taylor", *common, scale=0.3)
                    gradient_case(run, "favor m=6 eps=0.5 " + tag, "favor", *common,
                                  features=6, eps=0.5)
                    if causal:
                        gradient_case(run, "favor recurrent m=6 eps=0.5 " + tag, "favor",
                                      *common, kernel="recurrent", features=6, eps=0.5)
                        gradient_case(run, "linear recurrent eps=1e-3 " + tag, "linear",
                                      *common, kernel="recurrent", eps=1e-3)
                        gradient_case(run, "linear chunk=3 relu " + tag, "linear", *common,
                                      feature_map="relu", chunk=3)
    # longer sequences: several chunks, odd chunk sizes, the fused kernel's key blocks
    long_shape = ((2,), 150, 140, 6, 7)
    for precision in ("float32", "float64"):
        for chunk in (None, 1, 17, 64, 200):
            gradient_case(run, "linear causal long chunk=%s %s" % (chunk, precision), "linear",
                          long_shape, True, True, precision, chunk=chunk)
        gradient_case(run, "linear long " + precision, "linear", long_shape, False, True,
                      precision)
        for causal in (False, True):
            gradient_case(run, "softmax long causal=%d %s" % (causal, precision), "softmax",
                          long_shape, causal, True, precision)
        gradient_case(run, "hard causal long " + precision, "hard", long_shape, True, True,
                      precision)


# ---------------------------------------------------------------- part 2: refusals


def error_cases(run):
    rng = run.rng
    good = {}
    for name, shape in (("q", (2, 5, 4)), ("k", (2, 6, 4)), ("v", (2, 6, 3)), ("do", (2, 5, 3))):
        good[name] = run.path("good_" + name + ".npy")
        np.save(good[name], rng.standard_normal(shape).astype(np.float32))

    def save(name, array):
        np.save(run.path(name), array)
        return run.path(name)

    paths = {name: run.path(name) for name in OUTPUTS}
    base = ["--variant", "softmax", "--q", good["q"], "--k", good["k"], "--v", good["v"],
            "--out", paths["y.npy"]]
    grads = ["--grad-q", paths["dq.npy"], "--grad-k", paths["dk.npy"], "--grad-v",
             paths["dv.npy"]]
    full = base + ["--grad-out", good["do"]] + grads

    def with_do(path):
        return base + ["--grad-out", path] + grads

    # (label, args, a substring of the one line; None: any reason)
    cases = [
        ("--grad-out alone", base + ["--grad-out", good["do"]], "go together"),
        ("--grad-v missing", full[:-2], "--grad-v: missing"),
        ("--grad-out missing", base + grads, "--grad-out: missing"),
        ("--grad-q alone", base + grads[:2], "go together"),
        ("--grad-q without a value", base + ["--grad-out", good["do"]] + grads[2:] +
         ["--grad-q"], None),
        ("dO rows differ", with_do(save("do_rows.npy", np.zeros((2, 4, 3), np.float32))),
         "differs from the output's"),
        ("dO d_v differs (d_k instead)",
         with_do(save("do_dk.npy", np.zeros((2, 5, 4), np.float32))), "differs from the output's"),
        ("dO heads differ", with_do(save("do_h.npy", np.zeros((3, 5, 3), np.float32))),
         "differs from the output's"),
        ("dO rank differs", with_do(save("do_rank.npy", np.zeros((1, 2, 5, 3), np.float32))),
         "differs from the output's"),
        ("dO int dtype", with_do(save("do_int.npy", np.zeros((2, 5, 3), np.int32))), "dtype"),
        ("dO NaN", with_do(save("do_nan.npy", np.full((2, 5, 3), np.nan, np.float32))), None),
        ("dO missing", with_do(run.path("no_such_do.npy")), "no such file"),
        ("dO shape mismatch, linear causal",
         ["--variant", "linear", "--causal"] + with_do(run.path("do_rows.npy"))[2:],
         "differs from the output's"),
    ]
    # needing a backward (the refusal comes after it): a gradient the same file as --out,
    # and a gradient whose folder does not exist (Y must not appear either)
    cases += [
        ("--grad-q is --out", base + ["--grad-out", good["do"], "--grad-q", paths["y.npy"]] +
         grads[2:], "names the file of --out"),
        ("--grad-v folder missing", full[:-1] + [run.path("nowhere/dv.npy")], "cannot write"),
        ("--grad-k a directory", full[:-3] + [run.dir] + full[-2:], "cannot write"),
    ]
    before = set(os.listdir(run.dir))
    for label, args, reason in cases:
        clear_outputs(run)
        rc, _, err = run.attend(args)
        lines = err.splitlines()
        after = set(os.listdir(run.dir))
        stray = sorted(name for name in after - before)
        problems = []
        if rc != 2:
            problems.append("exit %d, want 2" % rc)
        if len(lines) != 1 or not lines[0].startswith("linattn: ") or not err.endswith("\n"):
            problems.append("stderr %r, want one line 'linattn: ...'" % err)
        elif reason and reason not in lines[0]:
            if NO_BACKWARD in lines[0]:
                run.skipped += 1  # this refusal needs the kernel's backward to be reached
            else:
                problems.append("stderr %r does not say %r" % (err, reason))
        if stray or any(".tmp." in name for name in after):
            problems.append("files written or left behind: %s" % stray)
        if problems:
            run.fail("error case '%s'" % label, "; ".join(problems))
        else:
            run.ok(label)

    # a refused run leaves existing outputs exactly as they were
    for name in OUTPUTS:
        with open(paths[name], "wb") as f:
            f.write(b"previous " + name.encode())
    rc, _, _ = run.attend(with_do(run.path("do_rows.npy")))
    kept = all(open(paths[name], "rb").read() == b"previous " + name.encode() for name in OUTPUTS)
    if rc == 2 and kept:
        run.ok("existing outputs kept")
    else:
        run.fail("existing outputs kept", "exit %d, contents kept: %s" % (rc, kept))
    clear_outputs(run)

    # the good flags do work, or are refused only for want of a backward
    rc, _, err = run.attend(full)
    if skipped(run, err, rc):
        return
    if rc == 0 and all(os.path.exists(p) for p in paths.values()):
        run.ok("good inputs")
    else:
        run.fail("good inputs", "exit %d: %s" % (rc, err.strip()))


def main():
    binary = checks.binary_arg("attend_grad_numpy.py")
    seed = checks.seed("attend_grad_numpy")
    workdir = tempfile.mkdtemp(prefix="attend_grad_numpy.")
    run = Run(binary, workdir, np.random.default_rng(seed))
    run.skipped = 0
    run.skipped_kernels = set()
    try:
        finite_differences(run)
        gradients(run)
        error_cases(run)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("attend_grad_numpy: %d passed, %d failed, %d skipped" % (run.passed, run.failed,
                                                                   run.skipped))
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
