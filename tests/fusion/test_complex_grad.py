"""Gradients through the complex kernels (issue 23) are torch's: the conjugate Wirtinger
convention, where a real loss L gives z.grad = dL/d(re z) + i dL/d(im z), and an op's rule is
g * conj(f'(z)) (fusion/derivatives.py). A real input of a complex op gets the real part of
its gradient. The expected values were recorded from torch 2.13.0 (cpu, complex128) by
running each loss below there; they are written out here, so this test needs no torch.
complex64 is checked against the same values at float32's tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt

_Z = [1 + 2j, 3 - 1j, -0.5 + 0.25j, -2 - 0.75j]
_W = [2 + 1j, 1 - 1j, 0.5j, -1.5 + 0.5j]
_X = [0.5, -1.5, 2.0, -0.25]

# each loss takes (module, z, w, x): z, w complex and x real, all requiring grad
_LOSSES = {
    "add": lambda T, z, w, x: (z + w).abs().sum(),
    "sub_real": lambda T, z, w, x: (z - x).abs().sum(),
    "mul": lambda T, z, w, x: (z * w).abs().sum(),
    "mul_real": lambda T, z, w, x: (x * z).abs().sum(),
    "mul_scalar": lambda T, z, w, x: (z * (2 - 1j)).abs().sum(),
    "div": lambda T, z, w, x: (z / w).abs().sum(),
    "div_real": lambda T, z, w, x: (x / z).abs().sum(),
    "exp": lambda T, z, w, x: (T.exp(z) * w).real.sum(),
    "abs": lambda T, z, w, x: (T.abs(z) * x).sum(),
    "angle": lambda T, z, w, x: (T.angle(z) * x).sum(),
    "sigmoid": lambda T, z, w, x: (T.sigmoid(z) * w).imag.sum(),
    "sgn": lambda T, z, w, x: (T.sgn(z) * w).real.sum(),
    "neg": lambda T, z, w, x: (-z * w).abs().sum(),
    "conj": lambda T, z, w, x: (z.conj() * w).abs().sum(),
    "conj_physical": lambda T, z, w, x: (T.conj_physical(z) * w).abs().sum(),
    "where": lambda T, z, w, x: T.where(x > 0, z, w).abs().sum(),
    "chain": lambda T, z, w, x: (T.exp(z * w) / (z + 2) - x).abs().sum(),
    "log": lambda T, z, w, x: (T.log(z) * w).real.sum(),
    "sqrt": lambda T, z, w, x: (T.sqrt(z) * w).imag.sum(),
    # rows whose complex kernels came in session 12 (test_complex_rows.py has the rest), and
    # the composites
    "tanh": lambda T, z, w, x: (T.tanh(z) * w).real.sum(),
    "sin": lambda T, z, w, x: (T.sin(z) * w).real.sum(),
    "cos": lambda T, z, w, x: (T.cos(z) * w).imag.sum(),
    "log1p": lambda T, z, w, x: (T.log1p(z) * w).real.sum(),
    "rsqrt": lambda T, z, w, x: (T.rsqrt(z) * w).real.sum(),
    "pow2": lambda T, z, w, x: (z**2 * w).real.sum(),
    "powzw": lambda T, z, w, x: (z**w).abs().sum(),
    "pow_real_base": lambda T, z, w, x: (2.0**z).abs().sum(),
    "reciprocal": lambda T, z, w, x: (z.reciprocal() * w).real.sum(),
    "square": lambda T, z, w, x: (z.square() * w).real.sum(),
    "rsub": lambda T, z, w, x: ((1 - z) * w).abs().sum(),
    "rdiv": lambda T, z, w, x: ((1 / z) * w).abs().sum(),
}

# torch 2.13.0's (z.grad, w.grad, x.grad) of each loss, complex128 (None: no gradient)
_TORCH = {
    "add": (
        [
            (0.7071067811865476 + 0.7071067811865476j),
            (0.8944271909999159 - 0.4472135954999579j),
            (-0.5547001962252291 + 0.8320502943378437j),
            (-0.9974586998307351 - 0.07124704998790965j),
        ],
        [
            (0.7071067811865476 + 0.7071067811865476j),
            (0.8944271909999159 - 0.4472135954999579j),
            (-0.5547001962252291 + 0.8320502943378437j),
            (-0.9974586998307351 - 0.07124704998790965j),
        ],
        None,
    ),
    "sub_real": (
        [
            (0.24253562503633297 + 0.9701425001453319j),
            (0.9761870601839527 - 0.21693045781865616j),
            (-0.9950371902099892 + 0.09950371902099892j),
            (-0.9191450300180578 - 0.39391929857916763j),
        ],
        None,
        [-0.24253562503633297, -0.9761870601839527, 0.9950371902099892, 0.9191450300180578],
    ),
    "mul": (
        [
            (1 + 2j),
            (1.3416407864998738 - 0.4472135954999579j),
            (-0.4472135954999579 + 0.22360679774997896j),
            (-1.4804664203952105 - 0.555174907648204j),
        ],
        [
            (2 + 1j),
            (2.23606797749979 - 2.23606797749979j),
            0.5590169943749475j,
            (-2.0263884129159444 + 0.6754628043053148j),
        ],
        None,
    ),
    "mul_real": (
        [
            (0.22360679774997896 + 0.4472135954999579j),
            (1.4230249470757705 - 0.4743416490252569j),
            (-1.7888543819998317 + 0.8944271909999159j),
            (-0.23408229439226114 - 0.08778086039709793j),
        ],
        None,
        [2.23606797749979, -3.162277660168379, 0.5590169943749475, -2.136000936329383],
    ),
    "mul_scalar": (
        [
            (1 + 2j),
            (2.1213203435596424 - 0.7071067811865475j),
            (-2 + 1j),
            (-2.093695690360855 - 0.7851358838853206j),
        ],
        None,
        None,
    ),
    "div": (
        [
            (0.2 + 0.4j),
            (0.6708203932499369 - 0.22360679774997896j),
            (-1.7888543819998317 + 0.8944271909999159j),
            (-0.5921865681580841 - 0.22206996305928153j),
        ],
        [
            (-0.40000000000000013 - 0.20000000000000004j),
            (-1.118033988749895 + 1.118033988749895j),
            -2.23606797749979j,
            (0.8105553651663777 - 0.27018512172212594j),
        ],
        None,
    ),
    "div_real": (
        [
            (-0.0447213595499958 - 0.0894427190999916j),
            (-0.14230249470757705 + 0.047434164902525694j),
            (5.7243340223994625 - 2.8621670111997313j),
            (0.05130570835994763 + 0.019239640634980362j),
        ],
        None,
        [0.44721359549995787, -0.31622776601683794, 1.7888543819998315, -0.4681645887845223],
    ),
    "exp": (
        [
            (-4.734135439518446 - 3.8122489602528242j),
            (-6.049134620952136 + 27.753658449348052j),
            (-0.07502904331108164 - 0.2938375451719613j),
            (-0.1024100931387673 - 0.18788632213427475j),
        ],
        [
            (-1.1312043837568135 - 2.4717266720048188j),
            (10.852261914197959 + 16.901396535150095j),
            (0.5876750903439226 - 0.15005808662216327j),
            (0.09902332031011532 + 0.0922497746528114j),
        ],
        None,
    ),
    "abs": (
        [
            (0.22360679774997896 + 0.4472135954999579j),
            (-1.4230249470757705 + 0.4743416490252569j),
            (-1.7888543819998317 + 0.8944271909999159j),
            (0.23408229439226114 + 0.08778086039709793j),
        ],
        None,
        [2.23606797749979, 3.1622776601683795, 0.5590169943749475, 2.1360009363293826],
    ),
    "angle": (
        [
            (-0.19999999999999996 + 0.09999999999999998j),
            (-0.14999999999999997 - 0.4499999999999999j),
            (-1.5999999999999996 - 3.1999999999999993j),
            (-0.041095890410958916 + 0.10958904109589043j),
        ],
        None,
        [1.1071487177940904, -0.3217505543966422, 2.677945044588987, -2.782821983319221],
    ),
    "sigmoid": (
        [
            (-0.7005477518407017 + 0.7024958948452047j),
            (0.008842928228488315 + 0.06606894405107051j),
            (0.11901851665314536 - 0.00733260309145059j),
            (0.1382691689405859 - 0.1087653153919103j),
        ],
        [
            (0.40343870608154253 + 1.0214153641721806j),
            (-0.03966222740197834 + 0.9721864932113107j),
            (0.05900296431450803 + 0.3757248355800388j),
            (-0.07584070651225049 + 0.09646711442434588j),
        ],
        None,
    ),
    "sgn": (
        [
            (0.8944271909999159 - 0.4472135954999579j),
            (0.1264911064067352 + 0.3794733192202055j),
            (-0.3577708763999663 - 0.7155417527999327j),
            (-0.00961982031749017 + 0.025652854179973875j),
        ],
        [
            (0.4472135954999579 - 0.8944271909999159j),
            (0.9486832980505138 + 0.31622776601683794j),
            (-0.8944271909999159 - 0.4472135954999579j),
            (-0.9363291775690445 + 0.3511234415883917j),
        ],
        None,
    ),
    "where": (
        [
            (0.4472135954999579 + 0.8944271909999159j),
            0j,
            (-0.8944271909999159 + 0.4472135954999579j),
            0j,
        ],
        [
            0j,
            (0.7071067811865475 - 0.7071067811865475j),
            0j,
            (-0.9486832980505138 + 0.31622776601683794j),
        ],
        None,
    ),
    "chain": (
        [
            (0.08732643188980305 - 0.5792834889461159j),
            (1.7698806319589924 - 0.7085300166899027j),
            (0.12489826842587282 + 0.5006372454452349j),
            (-58.240512292718435 + 32.843131884295396j),
        ],
        [
            (-0.22981874598569021 - 0.57601972935738j),
            (2.595054574998115 - 3.776900875991796j),
            (0.16511718015704244 + 0.2792483945892798j),
            (-77.74365967871242 + 29.720176615023945j),
        ],
        [0.9101572716764583, -0.3716227855939206, 0.9875426053153213, 0.11835110536369761],
    ),
    "log": (
        [
            (0.8 + 0.6000000000000001j),
            (0.39999999999999997 + 0.2j),
            (0.4 + 0.8j),
            (0.5753424657534246 + 0.4657534246575342j),
        ],
        [
            (0.8047189562170503 - 1.1071487177940904j),
            (1.151292546497023 + 0.3217505543966422j),
            (-0.5815754049028404 - 2.677945044588987j),
            (0.7589353594543049 + 2.782821983319221j),
        ],
        None,
    ),
    "sqrt": (
        [
            (-0.06714534375125135 + 0.7446532731328546j),
            (-0.232501487101071 + 0.3225785819055714j),
            (0.07682251907803297 + 0.3254254130173222j),
            (-0.4744139092425879 - 0.2598736437338192j),
        ],
        [
            (0.7861513777574233 + 1.272019649514069j),
            (-0.28484878459314106 + 1.755317301824428j),
            (0.7276733451126774 + 0.17178037486125622j),
            (-1.4380544037569272 + 0.2607689938713792j),
        ],
        None,
    ),
    "tanh": (
        [
            (-1.172106217364002 - 0.8342044435481992j),
            (0.004959044942195822 - 0.013146634820470881j),
            (-0.0961534018888924 - 0.4017640306096119j),
            (0.024581423438744233 - 0.11285415137461613j),
        ],
        [
            (1.16673625724092 + 0.2434582011857253j),
            (1.0020549882458116 + 0.004517137276658425j),
            (-0.4854872810241353 - 0.19805544995134955j),
            (-0.996747399904603 + 0.03643288937571831j),
        ],
        None,
    ),
    "sin": (
        [
            (7.117343813191131 + 4.071072591283935j),
            (-1.3617938481975644 - 1.6934826520355222j),
            (-0.06055439802190583 - 0.4525750752798034j),
            (1.1820327740655756 - 0.8522065559530649j),
        ],
        [
            (3.165778513216168 - 1.9596010414216063j),
            (0.21775955162215221 - 1.1634403637032504j),
            (-0.494485780933195 - 0.22168816414957482j),
            (-1.1772521793108766 - 0.34220450663488017j),
        ],
        None,
    ),
    "cos": (
        [
            (-7.084980596059381 - 4.371955985010731j),
            (-0.9456808120810982 - 1.3811999153254026j),
            (0.2472428904665975 + 0.11084408207478741j),
            (1.1019328496077585 - 1.5947760156488748j),
        ],
        [
            (-3.0518977991518 + 2.0327230070196656j),
            (0.1658444019189788 - 1.5276382501165433j),
            (0.12110879604381165 + 0.9051501505596068j),
            (-0.747730488384954 - 0.5387783532487324j),
        ],
        None,
    ),
    "log1p": (
        [(0.75 + 0.25j), (0.29411764705882354 + 0.1764705882352941j), (0.4 - 0.8j), (0.72 + 1.04j)],
        [
            (1.039720770839918 - 0.7853981633974483j),
            (1.416606672028108 + 0.24497866312686414j),
            (-0.5815754049028404 - 0.4636476090008061j),
            (0.22314355131420976 + 2.498091544796509j),
        ],
        None,
    ),
    "rsqrt": (
        [
            (-0.1220725171260704 - 0.3112903780033921j),
            (-0.1200237232817785 - 0.037492587939764135j),
            (0.45922264556528913 - 0.3832563609387104j),
            (-0.19190306178620917 + 0.1652433064514655j),
        ],
        [
            (0.5688644810057831 + 0.3515775842541429j),
            (0.5550800690066424 - 0.09007709480450046j),
            (0.3072900763121319 + 1.3017016520692888j),
            (0.12208280878354785 - 0.6732461485846332j),
        ],
        None,
    ),
    "pow2": (
        [-10j, (4 + 8j), (-0.25 + 0.5j), (6.75 - 0.25j)],
        [(-3 - 4j), (8 + 6j), (0.1875 + 0.25j), (3.4375 - 3j)],
        None,
    ),
    "powzw": (
        [
            (1.3219998703069222 + 0.9914999027301916j),
            (0.916907449065693 + 0.4584537245328466j),
            (0.10484593897241146 + 0.20969187794482272j),
            (0.740979832699137 + 0.5998408169469217j),
        ],
        [
            (1.3297979446905779 - 1.8295630766678286j),
            (2.6390717798423284 + 0.7375387001682443j),
            (-0.15243954852574662 - 0.701929156791121j),
            (0.9774279305830353 + 3.583978396121171j),
        ],
        None,
    ),
    "pow_real_base": (
        [
            (1.3862943611198908 + 0j),
            (5.545177444479561 - 4.440892098500626e-16j),
            (0.4901290717342736 - 1.3877787807814457e-17j),
            (0.17328679513998632 + 1.3877787807814457e-17j),
        ],
        None,
        None,
    ),
    "reciprocal": (
        [
            (0.08000000000000002 - 0.44000000000000006j),
            (-0.13999999999999999 - 0.02000000000000001j),
            (1.2800000000000002 + 0.9600000000000002j),
            (0.17564270970163254 + 0.29874272846687927j),
        ],
        [
            (0.2 + 0.4j),
            (0.3 - 0.09999999999999999j),
            (-1.6 + 0.8j),
            (-0.4383561643835616 - 0.1643835616438356j),
        ],
        None,
    ),
    "square": (
        [-10j, (4 + 8j), (-0.25 + 0.5j), (6.75 - 0.25j)],
        [(-3 - 4j), (8 + 6j), (0.1875 + 0.25j), (3.4375 - 3j)],
        None,
    ),
    "rsub": (
        [
            2.23606797749979j,
            (1.2649110640673518 - 0.6324555320336758j),
            (-0.4931969619160719 + 0.08219949365267865j),
            (-1.533929977694741 - 0.3834824944236852j),
        ],
        [
            (1.7888543819998317 + 0.8944271909999159j),
            (1.5811388300841895 - 1.5811388300841895j),
            1.520690632574555j,
            (-2.9336410823411923 + 0.9778803607803974j),
        ],
        None,
    ),
    "rdiv": (
        [
            (-0.20000000000000004 - 0.4000000000000001j),
            (-0.1341640786499874 + 0.04472135954999578j),
            (1.4310835055998656 - 0.7155417527999328j),
            (0.32448579077155293 + 0.12168217153933233j),
        ],
        [
            (0.4000000000000001 + 0.20000000000000004j),
            (0.22360679774997894 - 0.22360679774997896j),
            1.7888543819998315j,
            (-0.4441399261185631 + 0.14804664203952106j),
        ],
        None,
    ),
}
# |-z w| = |conj(z) w| = |z w|: torch gives these three losses mul's gradients, bit for bit
_TORCH["neg"] = _TORCH["conj"] = _TORCH["conj_physical"] = _TORCH["mul"]
_DTYPES = [(gt.complex128, gt.float64, 1e-12), (gt.complex64, gt.float32, 2e-6)]


def _grads(module, name, cdt, rdt, device=None):
    kw = {} if device is None else {"device": device}
    z = module.tensor(_Z, dtype=cdt, requires_grad=True, **kw)
    w = module.tensor(_W, dtype=cdt, requires_grad=True, **kw)
    x = module.tensor(_X, dtype=rdt, requires_grad=True, **kw)
    _LOSSES[name](module, z, w, x).backward()
    return z, w, x


@pytest.mark.parametrize("name", list(_LOSSES))
@pytest.mark.parametrize(("cdt", "rdt", "tol"), _DTYPES)
def test_gradient_is_torchs(device, name, cdt, rdt, tol):
    for t, want in zip(_grads(gt, name, cdt, rdt, device), _TORCH[name], strict=True):
        if want is None:
            assert t.grad is None
            continue
        assert t.grad.dtype is t.dtype  # a real input's gradient is real
        np.testing.assert_allclose(t.grad.cpu().numpy(), np.array(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("key", ["silu", "nan_to_num"])
def test_no_complex_derivative_where_torch_has_none(key):
    fn = gt.nn.functional.silu if key == "silu" else gt.nan_to_num
    z = gt.tensor(_Z, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"{key} does not support automatic differentiation"):
        fn(z).abs().sum().backward()


def test_recorded_values_are_torchs():
    """The table above, recomputed with torch where it is installed."""
    torch = pytest.importorskip("torch")
    for name in _LOSSES:
        got = _grads(torch, name, torch.complex128, torch.float64)
        for t, want in zip(got, _TORCH[name], strict=True):
            assert (t.grad is None) == (want is None), name
            if want is not None:
                np.testing.assert_array_equal(t.grad.resolve_conj().numpy(), np.array(want))


@pytest.mark.parametrize(("cdt", "rdt", "tol"), _DTYPES)
def test_fused_function_records_the_complex_graph(device, cdt, rdt, tol):
    """A fused function over complex tensors that require grad runs its body op by op (the
    fused backward is real-only), so the graph is recorded, not dropped: torch's gradients
    (the loss "chain" above, its elementwise part fused)."""
    z, w, x = (
        gt.tensor(v, dtype=d, requires_grad=True, device=device)
        for v, d in ((_Z, cdt), (_W, cdt), (_X, rdt))
    )
    r = gt.fuse(lambda a, b, c: gt.exp(a * b) / (a + 2) - c)(z, w, x)
    assert r.grad_fn is not None
    r.abs().sum().backward()
    for t, want in zip((z, w, x), _TORCH["chain"], strict=True):
        np.testing.assert_allclose(t.grad.cpu().numpy(), np.array(want), rtol=tol, atol=tol)


def test_numpy_scalar_operands():
    """A numpy scalar factor (np.float32(3), np.complex128(1-1j)) is a number to the rules:
    a real one is used as it is, a complex one conjugated (torch 2.13's values for the real
    ones and for a Python complex, recorded)."""
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    (x * np.float64(2.0)).abs().sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    z = gt.tensor([1 + 2j, 3 - 1j], dtype=gt.complex128, requires_grad=True)
    (z * np.complex128(1 - 1j)).real.sum().backward()
    assert z.grad.tolist() == [1 + 1j, 1 + 1j]  # conj(1 - 1j)
    z.grad = None
    (z ** np.int64(2)).real.sum().backward()
    assert z.grad.tolist() == [2 - 4j, 6 + 2j]  # 2 conj(z)
