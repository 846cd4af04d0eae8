"""Backward formulas of the matrix decompositions in ops/matrix.py: cholesky, pinverse,
svd, qr and eigh (torch's node names and conditions, from FunctionsManual.cpp's
cholesky_backward, pinv_backward, svd_backward, linalg_qr_backward and
linalg_eig_backward).

The formulas assume what torch's do: distinct singular values (svd) and eigenvalues (eigh),
or the result is inf/nan as in torch; a loss that depends on the arbitrary phase of complex
singular vectors or eigenvectors is an error, as are qr's modes that do not determine the
gradient ('r', and 'complete' with more rows than columns).
"""

from __future__ import annotations

from .. import dtype as _dt
from ..fusion.optable import OPS
from ..ops import matrix as la
from .record import first, formula

__all__: list = []


def _eye_mask(n, like):
    from ..creation import eye

    return eye(n, dtype=_dt.bool, device=like.device)


def _with_diagonal(m, diag):
    """`m` with its diagonal (last two dims) replaced by `diag` (a tensor, or 0)."""
    from ..ops.elementwise import where

    d = diag.diag_embed() if not isinstance(diag, (int, float)) else diag
    return where(_eye_mask(m.shape[-1], m), d, m)


def _solve_right(b, a):
    """x with x @ a = b (a square and invertible): (a^H x^H = b^H)^H."""
    return la.solve(a.mH, b.mH).mH


# -- cholesky -------------------------------------------------------------------------------
@formula("LinalgCholeskyExBackward0", (la, "cholesky"), inputs=first)
def _cholesky(ctx, out, a, upper=False):
    ctx.upper = upper
    ctx.save_for_backward(out)


@_cholesky.backward
def _(ctx, g):
    (factor,) = ctx.saved_tensors
    low, gl = (factor.mH, g.mH) if ctx.upper else (factor, g)
    # gA = L^{-H} phi(L^H gL) L^{-1}, phi: the lower triangle, its diagonal halved, made
    # Hermitian (Murray 2016, as torch's cholesky_backward)
    p = (low.mH @ gl).tril()
    p = 0.5 * (p + p.tril(-1).mH)
    return _solve_right(la.solve(low.mH, p), low)


# -- pinverse -------------------------------------------------------------------------------
@formula("PinverseBackward0", (la, "pinverse"), inputs=first)
def _pinverse(ctx, out, a, rcond=1e-15):
    ctx.save_for_backward(a, out)


@_pinverse.backward
def _(ctx, g):
    a, p = ctx.saved_tensors
    m, n = a.shape[-2], a.shape[-1]
    ph, gh = p.mH, g.mH
    if m <= n:  # the products of the smaller dimension
        k = gh @ p
        kph = k @ ph
        return -(p @ k).mH + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
    k = p @ gh
    phk = ph @ k
    return -(k @ p).mH + (gh - a @ k) @ p @ ph + phk - phk @ p @ a


# -- svd ------------------------------------------------------------------------------------
@formula("LinalgSvdBackward0", (la, "svd"), inputs=first, multi=True)
def _svd(ctx, out, a, some=True, compute_uv=True):
    ctx.compute_uv, ctx.some = compute_uv, some
    u, s, v = out
    ctx.save_for_backward(u, s, v)


def _skew(x):
    return x - x.mH


def svd_backward(gu, gs, gvh, u, s, vh):
    """dL/dA of A = U diag(S) Vh (reduced factors) from the gradients of U, S and Vh (None
    where a factor does not reach the loss)."""
    m, n = u.shape[-2], vh.shape[-1]
    if gu is None and gvh is None:
        return u @ (gs.unsqueeze(-1) * vh) if m >= n else (u * gs.unsqueeze(-2)) @ vh
    is_complex = u.dtype.is_complex
    v = vh.mH
    gv = None if gvh is None else gvh.mH
    uhgu = None if gu is None else u.mH @ gu
    vhgv = None if gv is None else v.mH @ gv
    if is_complex:  # the loss must not depend on the phase of each singular vector pair
        im_u = uhgu.diagonal(0, -2, -1).imag if uhgu is not None else s * 0
        im_v = vhgv.diagonal(0, -2, -1).imag if vhgv is not None else s * 0
        if not bool(((im_u + im_v).abs() <= 1e-2 + 1e-2 * im_v.abs()).all()):
            raise RuntimeError(
                "svd_backward: The singular vectors in the complex case are specified up to "
                "multiplication by e^{i phi}. The specified loss function depends on this "
                "phase term, making it ill-defined."
            )
    uhgu = None if uhgu is None else _skew(uhgu)
    vhgv = None if vhgv is None else _skew(vhgv)
    s2 = s * s
    e = _with_diagonal(s2.unsqueeze(-2) - s2.unsqueeze(-1), 1.0)  # S_j^2 - S_i^2
    if uhgu is not None and vhgv is not None:
        ga = (uhgu * s.unsqueeze(-2) + s.unsqueeze(-1) * vhgv) / e
    elif uhgu is not None:
        ga = (uhgu / e) * s.unsqueeze(-2)
    else:
        ga = s.unsqueeze(-1) * (vhgv / e)
    ga = _with_diagonal(ga, 0.0)
    if gs is not None:
        ga = ga + gs.to(ga.dtype).diag_embed()
    if is_complex and uhgu is not None:
        ga = ga + (uhgu.diagonal(0, -2, -1) / (2 * s)).diag_embed()
    if m > n and gu is not None:
        ga = u @ ga
        gusinv = gu / s.unsqueeze(-2)
        ga = (ga + gusinv - u @ (u.mH @ gusinv)) @ vh
    elif m < n and gvh is not None:
        ga = ga @ vh
        sinvgvh = gvh / s.unsqueeze(-1)
        ga = u @ (ga + sinvgvh - (sinvgvh @ v) @ vh)
    else:
        ga = u @ (ga @ vh) if m >= n else (u @ ga) @ vh
    return ga


@_svd.backward
def _(ctx, grads):
    if not ctx.compute_uv:
        raise RuntimeError(
            "svd_backward: Setting compute_uv to false in torch.svd doesn't compute singular "
            "matrices, and hence we cannot compute backward. Please use "
            "torch.svd(compute_uv=True)"
        )
    u, s, v = ctx.saved_tensors
    gu, gs, gv = grads
    vh, gvh = v.mH, (None if gv is None else gv.mH)
    k = s.shape[-1]
    if not ctx.some:  # full matrices: only the first min(m, n) vectors reach A
        u, vh = u[..., :k], vh[..., :k, :]
        gu = None if gu is None else gu[..., :k]
        gvh = None if gvh is None else gvh[..., :k, :]
    return svd_backward(gu, gs, gvh, u, s, vh)


# -- qr -------------------------------------------------------------------------------------
def _qr_mode(rest, kw):
    v = rest[0] if rest else kw.get("mode", kw.get("some", True))
    return v if isinstance(v, str) else ("reduced" if v else "complete")


@formula("LinalgQrBackward0", (la, "qr"), (la, "linalg_qr"), inputs=first, multi=True)
def _qr(ctx, out, a, *rest, **kw):
    ctx.mode = _qr_mode(rest, kw)
    q, r = out
    ctx.save_for_backward(q, r)


def _syminvadj(x):
    """x + x^H with the real part of the diagonal halved (torch's syminvadj)."""
    return _with_diagonal(x + x.mH, x.diagonal(0, -2, -1).real.to(x.dtype))


def _qr_square_or_tall(gq, gr, q, r):
    """m >= n (reduced): gA = (gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^{-H}."""
    inner = (gr @ r.mH if gr is not None else 0) - (q.mH @ gq if gq is not None else 0)
    ga = q @ _syminvadj(inner.triu())
    if gq is not None:
        ga = ga + gq
    return _solve_right(ga, r.mH)


@_qr.backward
def _(ctx, grads):
    q, r = ctx.saved_tensors
    if ctx.mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
            "through linalg.qr."
        )
    m, n = q.shape[-2], r.shape[-1]
    if ctx.mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        )
    gq, gr = grads
    if gq is None and gr is None:
        return None
    if m >= n:
        return _qr_square_or_tall(gq, gr, q, r)
    # m < n: A = Q [X | Y]; Q and X are the QR of A's first m columns, and Y = Q^H A_2
    from ..ops.join import cat

    x, y = r[..., :m], r[..., m:]
    a2 = q @ y
    gx = None if gr is None else gr[..., :m]
    gy = None if gr is None else gr[..., m:]
    if gy is not None:
        gq = a2 @ gy.mH if gq is None else gq + a2 @ gy.mH
    ga1 = _qr_square_or_tall(gq, gx, q, x)
    ga2 = q @ gy if gy is not None else (a2 * 0)
    return cat([ga1, ga2], -1)


# -- eigh -----------------------------------------------------------------------------------
@formula("LinalgEighBackward0", (la, "eigh"), inputs=first, multi=True)
def _eigh(ctx, out, a, uplo="L", **kw):
    w, v = out
    ctx.save_for_backward(w, v)


@_eigh.backward
def _(ctx, grads):
    w, v = ctx.saved_tensors
    gw, gv = grads
    if gv is None:
        if gw is None:
            return None
        return v @ (gw.to(v.dtype).unsqueeze(-1) * v.mH)
    vhgv = v.mH @ gv
    if v.dtype.is_complex and not bool((vhgv.diagonal(0, -2, -1).imag.abs() <= 1e-3).all()):
        raise RuntimeError(
            "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this "
            "quantity, so it is ill-defined."
        )
    vhgv = 0.5 * (vhgv - vhgv.mH)  # onto the skew-Hermitian matrices (V stays unitary)
    e = _with_diagonal(w.unsqueeze(-2) - w.unsqueeze(-1), 1.0)  # L_j - L_i
    inner = _with_diagonal(vhgv / e.to(vhgv.dtype), 0.0 if gw is None else gw.to(v.dtype))
    return v @ (inner @ v.mH)


# -- complex parts (what the decompositions' complex losses are written with) --------------
def _complex_part(name, node, back):
    from ..ops import elementwise as ew

    @formula(node, (ew, name), inputs=first)
    def fwd(ctx, out, z):
        ctx.dtype = z.dtype

    fwd.backward(lambda ctx, g: back(g.to(ctx.dtype)))


_complex_part("real", "RealBackward0", lambda g: g)
_complex_part("imag", "ImagBackward0", lambda g: g * 1j)
_complex_part("conj", "ConjBackward0", lambda g: OPS["conj"].grad(g, None, None)[0])
_complex_part(
    "conj_physical", "ConjPhysicalBackward0", lambda g: OPS["conj_physical"].grad(g, None, None)[0]
)
